#pragma once

// LoopDisk: a small ext4 file system of its own (a file on the test's disk, mounted through a
// loop device with errors=remount-ro, Debian's default) for one node's data directory, so that
// a test can make that disk fail the way real disks do, in the kernel and not below the store:
//   - TriggerError: ext4 records an error (as after a failed block write) and goes read-only:
//     every write, sync and create then fails with EROFS;
//   - Freeze / Thaw (fsfreeze): every write and sync blocks until the thaw, as on a disk or
//     network volume that stops answering.
// Mounting needs root and loop devices: Create says why it cannot, and the test skips with that
// reason. The destructor thaws and unmounts (the loop device goes with the unmount).
//
// Thread-safety: none; the test's main thread drives it.

#include <memory>
#include <string>

#include "src/common/status.h"

namespace shoal::cluster_test {

class LoopDisk {
 public:
  // Makes a `megabytes` ext4 image in `dir` and mounts it at dir/mnt.
  [[nodiscard]] static StatusOr<std::unique_ptr<LoopDisk>> Create(const std::string& dir,
                                                                  int megabytes);
  ~LoopDisk();
  LoopDisk(const LoopDisk&) = delete;
  LoopDisk& operator=(const LoopDisk&) = delete;

  [[nodiscard]] const std::string& mount_point() const { return mount_point_; }

  [[nodiscard]] Status TriggerError();
  [[nodiscard]] Status Freeze();
  [[nodiscard]] Status Thaw();
  // Unmounts now (the disk is "replaced"); the destructor then does nothing.
  [[nodiscard]] Status Unmount();

 private:
  LoopDisk(std::string image, std::string mount_point, std::string device)
      : image_(std::move(image)),
        mount_point_(std::move(mount_point)),
        device_(std::move(device)) {}

  const std::string image_;
  const std::string mount_point_;
  const std::string device_;  // e.g. loop3, as /sys/fs/ext4 names it
  bool frozen_ = false;
  bool mounted_ = true;
};

}  // namespace shoal::cluster_test
