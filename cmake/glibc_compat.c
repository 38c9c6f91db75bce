// SPDX-License-Identifier: Apache-2.0
// Linked into the op libraries when CONSTMEM_PORTABLE_LINK is on (cmake/constmemPortable.cmake), so
// that a library built on a new glibc loads on glibc 2.28 (manylinux_2_28) without another sysroot.
//
// glibc 2.34 moved libdl, libpthread and librt into libc and gave their functions a new default
// version (GLIBC_2.34); whatever calls them (the static CUDA runtime, libstdc++) binds to that
// version. Each function listed below is linked with -Wl,--wrap=<name>, which sends every call of
// it to __wrap_<name> here, and that calls the function's oldest version, which every glibc has.
// (Before glibc 2.34 these live in libdl.so.2, libpthread.so.0 and librt.so.1, which the library
// then names as needed.) constmemPortable.cmake reads the list of names from this file: a name is
// added by adding a CONSTMEM_COMPAT line.
//
// A few functions have no version older than 2.28; the static libstdc++ of a library that links it
// calls them, and __wrap_<name> below does their work with older functions: fstat64 (GLIBC_2.33,
// before it an inline call of __fxstat64) and arc4random (GLIBC_2.36, std::random_device).
//
// libstdc++'s headers of glibc >= 2.32 read __libc_single_threaded (GLIBC_2.32) to skip atomics in
// single-threaded programs: a hidden definition of our own that stays 0 makes them always use the
// atomics, which is correct in any program.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define CONSTMEM_GLIBC_BASE "GLIBC_2.2.5"
#define CONSTMEM_GLIBC_DLMOPEN "GLIBC_2.3.4"
#define CONSTMEM_STAT_VERSION 1  // _STAT_VER_LINUX of glibc < 2.33
#elif defined(__aarch64__)
#define CONSTMEM_GLIBC_BASE "GLIBC_2.17"
#define CONSTMEM_GLIBC_DLMOPEN "GLIBC_2.17"
#define CONSTMEM_STAT_VERSION 0
#else
#error "constmem: CONSTMEM_PORTABLE_LINK knows the oldest glibc versions of x86_64 and aarch64 only"
#endif

#define CONSTMEM_HIDDEN __attribute__((visibility("hidden")))

CONSTMEM_HIDDEN char __libc_single_threaded = 0;

// CONSTMEM_COMPAT(version, return type, name, (parameters), (arguments)): __wrap_<name> calls
// <name>@<version>.
#define CONSTMEM_COMPAT(version, type, name, parameters, arguments) \
  extern type constmem_glibc_##name parameters;                     \
  __asm__(".symver constmem_glibc_" #name "," #name "@" version);   \
  CONSTMEM_HIDDEN type __wrap_##name parameters;                    \
  CONSTMEM_HIDDEN type __wrap_##name parameters { return constmem_glibc_##name arguments; }

#define B CONSTMEM_GLIBC_BASE
// libdl
CONSTMEM_COMPAT(B, void*, dlopen, (const char* file, int mode), (file, mode))
CONSTMEM_COMPAT(CONSTMEM_GLIBC_DLMOPEN, void*, dlmopen, (Lmid_t lmid, const char* file, int mode),
                (lmid, file, mode))
CONSTMEM_COMPAT(B, int, dlclose, (void* handle), (handle))
CONSTMEM_COMPAT(B, char*, dlerror, (void), ())
CONSTMEM_COMPAT(B, void*, dlsym, (void* handle, const char* name), (handle, name))
CONSTMEM_COMPAT(B, void*, dlvsym, (void* handle, const char* name, const char* version),
                (handle, name, version))
// libpthread: threads, keys, once
CONSTMEM_COMPAT(B, int, pthread_create,
                (pthread_t * thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg),
                (thread, attr, start, arg))
CONSTMEM_COMPAT(B, int, pthread_detach, (pthread_t thread), (thread))
CONSTMEM_COMPAT(B, int, pthread_join, (pthread_t thread, void** result), (thread, result))
CONSTMEM_COMPAT(B, int, pthread_kill, (pthread_t thread, int sig), (thread, sig))
CONSTMEM_COMPAT(B, int, __pthread_key_create, (pthread_key_t * key, void (*destructor)(void*)),
                (key, destructor))
CONSTMEM_COMPAT(B, int, pthread_key_create, (pthread_key_t * key, void (*destructor)(void*)),
                (key, destructor))
CONSTMEM_COMPAT(B, int, pthread_key_delete, (pthread_key_t key), (key))
CONSTMEM_COMPAT(B, void*, pthread_getspecific, (pthread_key_t key), (key))
CONSTMEM_COMPAT(B, int, pthread_setspecific, (pthread_key_t key, const void* value), (key, value))
CONSTMEM_COMPAT(B, int, pthread_once, (pthread_once_t * once, void (*routine)(void)),
                (once, routine))
// libpthread: mutexes and condition variables
CONSTMEM_COMPAT(B, int, pthread_mutex_trylock, (pthread_mutex_t * mutex), (mutex))
CONSTMEM_COMPAT(B, int, pthread_mutexattr_init, (pthread_mutexattr_t * attr), (attr))
CONSTMEM_COMPAT(B, int, pthread_mutexattr_destroy, (pthread_mutexattr_t * attr), (attr))
CONSTMEM_COMPAT(B, int, pthread_mutexattr_settype, (pthread_mutexattr_t * attr, int kind),
                (attr, kind))
CONSTMEM_COMPAT(B, int, pthread_mutexattr_setpshared, (pthread_mutexattr_t * attr, int shared),
                (attr, shared))
CONSTMEM_COMPAT(B, int, pthread_condattr_setpshared, (pthread_condattr_t * attr, int shared),
                (attr, shared))
// libpthread: read-write locks
CONSTMEM_COMPAT(B, int, pthread_rwlock_init,
                (pthread_rwlock_t * lock, const pthread_rwlockattr_t* attr), (lock, attr))
CONSTMEM_COMPAT(B, int, pthread_rwlock_destroy, (pthread_rwlock_t * lock), (lock))
CONSTMEM_COMPAT(B, int, pthread_rwlock_rdlock, (pthread_rwlock_t * lock), (lock))
CONSTMEM_COMPAT(B, int, pthread_rwlock_wrlock, (pthread_rwlock_t * lock), (lock))
CONSTMEM_COMPAT(B, int, pthread_rwlock_tryrdlock, (pthread_rwlock_t * lock), (lock))
CONSTMEM_COMPAT(B, int, pthread_rwlock_trywrlock, (pthread_rwlock_t * lock), (lock))
CONSTMEM_COMPAT(B, int, pthread_rwlock_timedrdlock,
                (pthread_rwlock_t * lock, const struct timespec* until), (lock, until))
CONSTMEM_COMPAT(B, int, pthread_rwlock_timedwrlock,
                (pthread_rwlock_t * lock, const struct timespec* until), (lock, until))
CONSTMEM_COMPAT(B, int, pthread_rwlock_unlock, (pthread_rwlock_t * lock), (lock))
CONSTMEM_COMPAT(B, int, pthread_rwlockattr_init, (pthread_rwlockattr_t * attr), (attr))
CONSTMEM_COMPAT(B, int, pthread_rwlockattr_destroy, (pthread_rwlockattr_t * attr), (attr))
CONSTMEM_COMPAT(B, int, pthread_rwlockattr_setpshared, (pthread_rwlockattr_t * attr, int shared),
                (attr, shared))
// libpthread: spin locks
CONSTMEM_COMPAT(B, int, pthread_spin_init, (pthread_spinlock_t * lock, int shared), (lock, shared))
CONSTMEM_COMPAT(B, int, pthread_spin_destroy, (pthread_spinlock_t * lock), (lock))
CONSTMEM_COMPAT(B, int, pthread_spin_lock, (pthread_spinlock_t * lock), (lock))
CONSTMEM_COMPAT(B, int, pthread_spin_trylock, (pthread_spinlock_t * lock), (lock))
CONSTMEM_COMPAT(B, int, pthread_spin_unlock, (pthread_spinlock_t * lock), (lock))
// libpthread: semaphores
CONSTMEM_COMPAT(B, int, sem_init, (sem_t * sem, int shared, unsigned int value),
                (sem, shared, value))
CONSTMEM_COMPAT(B, int, sem_destroy, (sem_t * sem), (sem))
CONSTMEM_COMPAT(B, int, sem_post, (sem_t * sem), (sem))
CONSTMEM_COMPAT(B, int, sem_wait, (sem_t * sem), (sem))
CONSTMEM_COMPAT(B, int, sem_trywait, (sem_t * sem), (sem))
CONSTMEM_COMPAT(B, int, sem_timedwait, (sem_t * sem, const struct timespec* until), (sem, until))
// librt
CONSTMEM_COMPAT(B, int, shm_open, (const char* name, int flags, mode_t mode), (name, flags, mode))
CONSTMEM_COMPAT(B, int, shm_unlink, (const char* name), (name))

// fstat64: glibc < 2.33 made it an inline call of __fxstat64, which glibc still has.
extern int constmem_glibc___fxstat64(int version, int fd, struct stat64* buf);
__asm__(".symver constmem_glibc___fxstat64,__fxstat64@" B);
CONSTMEM_HIDDEN int __wrap_fstat64(int fd, struct stat64* buf);
CONSTMEM_HIDDEN int __wrap_fstat64(int fd, struct stat64* buf) {
  return constmem_glibc___fxstat64(CONSTMEM_STAT_VERSION, fd, buf);
}

// arc4random: getrandom (GLIBC_2.25), /dev/urandom where the kernel lacks it (before 3.17).
CONSTMEM_HIDDEN uint32_t __wrap_arc4random(void);
CONSTMEM_HIDDEN uint32_t __wrap_arc4random(void) {
  uint32_t value = 0;
  unsigned char* bytes = (unsigned char*)&value;
  size_t have = 0;
  while (have < sizeof value) {
    ssize_t got = getrandom(bytes + have, sizeof value - have, 0);
    if (got > 0) {
      have += (size_t)got;
    } else if (got < 0 && errno == ENOSYS) {
      break;
    }
  }
  if (have < sizeof value) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    while (fd >= 0 && have < sizeof value) {
      ssize_t got = read(fd, bytes + have, sizeof value - have);
      if (got > 0) {
        have += (size_t)got;
      } else if (got == 0 || errno != EINTR) {
        break;
      }
    }
    if (fd >= 0) {
      close(fd);
    }
    if (have < sizeof value) {
      abort();  // as glibc's arc4random does when the kernel gives no randomness
    }
  }
  return value;
}
#undef B
