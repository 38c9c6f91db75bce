// SPDX-License-Identifier: Apache-2.0
// Host-side bookkeeping of a bank's slots: which runs of slots are leased, and what host content
// each run holds, so that an unchanged table is not copied again. No CUDA include; not
// thread-safe by itself (the bank guards it with its mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

// Private to each library that compiles it (visibility.hpp).
#pragma GCC visibility push(hidden)
namespace constmem {

class SlotPlanner {
 public:
  SlotPlanner(int slot_count, std::size_t slot_bytes)
      : slot_bytes_(slot_bytes), slots_(static_cast<std::size_t>(slot_count)) {}

  int slot_count() const { return static_cast<int>(slots_.size()); }
  std::size_t slot_bytes() const { return slot_bytes_; }
  std::size_t capacity_bytes() const { return slot_bytes_ * slots_.size(); }

  // Slots a table of `bytes` occupies; 0 when it does not fit the bank at all.
  int SlotsNeeded(std::size_t bytes) const {
    if (bytes == 0 || bytes > capacity_bytes()) return 0;
    return static_cast<int>((bytes + slot_bytes_ - 1) / slot_bytes_);
  }

  // The first slot of a run that already holds exactly these bytes, or -1.
  int FindContent(const void* content, std::size_t bytes) const {
    for (int start = 0; start < slot_count(); ++start) {
      if (Holds(start, content, bytes)) return start;
    }
    return -1;
  }

  bool Holds(int start, const void* content, std::size_t bytes) const {
    const Slot& first = slots_[start];
    if (!first.content_known || first.content.size() != bytes) return false;
    const int span = SlotsNeeded(bytes);
    if (span == 0 || start + span > slot_count()) return false;
    for (int i = start; i < start + span; ++i) {
      if (slots_[i].generation != first.generation) return false;
    }
    return std::memcmp(first.content.data(), content, bytes) == 0;
  }

  bool RunIsFree(int start, int span) const {
    if (start < 0 || span <= 0 || start + span > slot_count()) return false;
    for (int i = start; i < start + span; ++i) {
      if (slots_[i].leased || slots_[i].quarantined) return false;
    }
    return true;
  }

  // Whether waiting can ever give `owner` a run of `span` slots: false when every run that could
  // hold it has a slot that `owner` itself leases or that is quarantined. Waiting then would wait
  // for the caller itself, for ever.
  bool CanBecomeFree(int span, std::uint64_t owner) const {
    for (int start = 0; start + span <= slot_count(); ++start) {
      bool possible = true;
      for (int i = start; i < start + span && possible; ++i) {
        possible = !slots_[i].quarantined && !(slots_[i].leased && slots_[i].owner == owner);
      }
      if (possible) return true;
    }
    return false;
  }

  // A free run of `span` slots, searched round-robin so that consecutive leases from different
  // streams land in different slots and need not wait for each other. -1 when none is free.
  int FindFreeRun(int span) {
    const int candidates = slot_count() - span + 1;
    for (int k = 0; k < candidates; ++k) {
      const int start = (cursor_ + k) % candidates;
      if (RunIsFree(start, span)) {
        cursor_ = (start + span) % slot_count();
        return start;
      }
    }
    return -1;
  }

  // `owner` identifies the leasing thread, so that a thread never waits for its own lease.
  void Lease(int start, int span, std::uint64_t owner = 0) {
    SetLeased(start, span, true);
    for (int i = start; i < start + span; ++i) slots_[i].owner = owner;
  }
  void Unlease(int start, int span) { SetLeased(start, span, false); }

  // Takes a run out of use: its last reader is unknown (recording its event failed), so nothing
  // may be written into it until the device is known to be idle. Forgets its content.
  void Quarantine(int start, int span) {
    RecordContent(start, span, nullptr, 0);
    for (int i = start; i < start + span; ++i) slots_[i].quarantined = true;
  }
  // After the caller has made sure no work that reads the bank is pending (a device sync).
  int ClearQuarantine() {
    int cleared = 0;
    for (Slot& slot : slots_) {
      cleared += slot.quarantined ? 1 : 0;
      slot.quarantined = false;
    }
    return cleared;
  }
  bool IsQuarantined(int slot) const { return slots_[slot].quarantined; }

  // "free leased(yours) leased quarantined ...", one word per slot, for error messages.
  std::string Describe(std::uint64_t owner) const {
    std::string text;
    for (const Slot& slot : slots_) {
      if (!text.empty()) text += ' ';
      text += slot.quarantined ? "quarantined"
              : slot.leased    ? (slot.owner == owner ? "leased(yours)" : "leased")
                               : "free";
    }
    return text;
  }

  // Marks the run as holding `content` (host bytes) or, with nullptr, something the host cannot
  // compare (a device-to-device copy).
  void RecordContent(int start, int span, const void* content, std::size_t bytes) {
    const std::uint64_t generation = ++generation_counter_;
    for (int i = start; i < start + span; ++i) {
      slots_[i].generation = generation;
      slots_[i].content_known = false;
      slots_[i].content.clear();
    }
    if (content != nullptr) {
      Slot& first = slots_[start];
      first.content_known = true;
      const auto* begin = static_cast<const unsigned char*>(content);
      first.content.assign(begin, begin + bytes);
    }
  }

  bool IsLeased(int slot) const { return slots_[slot].leased; }

 private:
  struct Slot {
    bool leased = false;
    bool quarantined = false;
    std::uint64_t owner = 0;
    bool content_known = false;
    std::uint64_t generation = 0;
    std::vector<unsigned char> content;  // held by the first slot of a run only
  };

  void SetLeased(int start, int span, bool leased) {
    for (int i = start; i < start + span; ++i) slots_[i].leased = leased;
  }

  std::size_t slot_bytes_;
  std::vector<Slot> slots_;
  int cursor_ = 0;
  std::uint64_t generation_counter_ = 0;
};

}  // namespace constmem
#pragma GCC visibility pop
