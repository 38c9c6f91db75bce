// SPDX-License-Identifier: Apache-2.0
// Linked into the op libraries that keep the shared libstdc++ (constmem_portable_link(target
// GLIBC_ONLY) in cmake/constmemPortable.cmake: TensorFlow's, which passes C++ objects to
// TensorFlow), so that they need no libstdc++ newer than the one TensorFlow's wheel needs
// (GLIBCXX_3.4.22, CXXABI_1.3.11: gcc 7's, manylinux_2_28's is gcc 8's), although built with a new
// gcc. Each function below that the new gcc's headers call with a new version is linked with
// -Wl,--wrap=<mangled name>, which sends every call of it to __wrap_<mangled name> here, and that
// does the same work with functions of older versions. constmemPortable.cmake reads the list of
// names from this file: a name is added by adding a CONSTMEM_WRAP definition.
#include <condition_variable>
#include <mutex>
#include <new>
#include <sstream>

// CONSTMEM_WRAP(name, (parameters)) { body }: defines __wrap_<name>, hidden, with C linkage (its
// name is a mangled one).
#define CONSTMEM_WRAP(name, parameters)                                           \
  extern "C" __attribute__((visibility("hidden"))) void __wrap_##name parameters; \
  extern "C" __attribute__((visibility("hidden"))) void __wrap_##name parameters

// std::condition_variable::wait(std::unique_lock<std::mutex>&): gcc 12 gave it GLIBCXX_3.4.30, no
// longer noexcept (a thread cancelled while it waits unwinds instead of terminating); its
// GLIBCXX_3.4.11 version is the same wait but noexcept.
extern "C" void constmem_glibcxx_condition_variable_wait(std::condition_variable* self,
                                                         std::unique_lock<std::mutex>* lock);
__asm__(
    ".symver constmem_glibcxx_condition_variable_wait,"
    "_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE@GLIBCXX_3.4.11");
CONSTMEM_WRAP(_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE,
              (std::condition_variable * self, std::unique_lock<std::mutex>* lock)) {
  constmem_glibcxx_condition_variable_wait(self, lock);
}

// std::__throw_bad_array_new_length() (GLIBCXX_3.4.29, gcc 11's std::allocator<T>::allocate):
// std::bad_array_new_length itself is CXXABI_1.3.8.
CONSTMEM_WRAP(_ZSt28__throw_bad_array_new_lengthv, ()) { throw std::bad_array_new_length(); }

// The default constructors of the string streams (GLIBCXX_3.4.26, gcc 9's, before them a default
// argument of the constructor taking an openmode): the complete-object constructors construct in
// place with that openmode, which is what the default constructors do.
CONSTMEM_WRAP(_ZNSt7__cxx1118basic_stringstreamIcSt11char_traitsIcESaIcEEC1Ev,
              (std::stringstream * self)) {
  new (self) std::stringstream(std::ios_base::in | std::ios_base::out);
}
CONSTMEM_WRAP(_ZNSt7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEEC1Ev,
              (std::ostringstream * self)) {
  new (self) std::ostringstream(std::ios_base::out);
}
CONSTMEM_WRAP(_ZNSt7__cxx1119basic_istringstreamIcSt11char_traitsIcESaIcEEC1Ev,
              (std::istringstream * self)) {
  new (self) std::istringstream(std::ios_base::in);
}
