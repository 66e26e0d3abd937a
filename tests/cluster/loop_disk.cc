#include "tests/cluster/loop_disk.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace shoal::cluster_test {
namespace {

// Runs `command` through the shell; its output (both streams) in the error if it fails.
Status Run(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return InternalError(fmt::format("cannot run {}", command));
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return FailedPreconditionError(
        fmt::format("`{}` failed (wait status {}): {}", command, status, output));
  }
  return OkStatus();
}

// The device mounted at `mount_point`, by /proc/mounts (e.g. "/dev/loop3").
StatusOr<std::string> DeviceOf(const std::string& mount_point) {
  std::ifstream mounts("/proc/mounts");
  std::string device, point, rest;
  while (mounts >> device >> point && std::getline(mounts, rest)) {
    if (point == mount_point) return device;
  }
  return NotFoundError(fmt::format("{} is not a mount point", mount_point));
}

}  // namespace

StatusOr<std::unique_ptr<LoopDisk>> LoopDisk::Create(const std::string& dir, int megabytes) {
  if (::geteuid() != 0) return FailedPreconditionError("mounting a loop device needs root");
  const std::string image = dir + "/disk.img";
  const std::string mount_point = dir + "/mnt";
  std::error_code ec;
  std::filesystem::create_directories(mount_point, ec);
  if (ec) return InternalError(fmt::format("mkdir {}: {}", mount_point, ec.message()));
  SHOAL_RETURN_IF_ERROR(Run(fmt::format("truncate -s {}M '{}'", megabytes, image)));
  SHOAL_RETURN_IF_ERROR(Run(fmt::format("mkfs.ext4 -q -F '{}'", image)));
  SHOAL_RETURN_IF_ERROR(
      // --rw: fail rather than fall back to a read-only mount on a write-protected device.
      Run(fmt::format("mount --rw -o loop,errors=remount-ro '{}' '{}'", image, mount_point)));
  auto device = DeviceOf(mount_point);
  if (!device.ok()) {
    (void)Run(fmt::format("umount '{}'", mount_point));
    return device.status();
  }
  return std::unique_ptr<LoopDisk>(
      new LoopDisk(image, mount_point, std::filesystem::path(*device).filename().string()));
}

LoopDisk::~LoopDisk() {
  if (frozen_) (void)Thaw();
  if (mounted_) (void)Unmount();
}

Status LoopDisk::TriggerError() {
  const std::string knob = fmt::format("/sys/fs/ext4/{}/trigger_fs_error", device_);
  std::ofstream out(knob);
  out << "shoal test: a failed block write\n";
  out.flush();
  if (!out) return FailedPreconditionError(fmt::format("cannot write {}", knob));
  return OkStatus();
}

Status LoopDisk::Freeze() {
  SHOAL_RETURN_IF_ERROR(Run(fmt::format("fsfreeze --freeze '{}'", mount_point_)));
  frozen_ = true;
  return OkStatus();
}

Status LoopDisk::Thaw() {
  SHOAL_RETURN_IF_ERROR(Run(fmt::format("fsfreeze --unfreeze '{}'", mount_point_)));
  frozen_ = false;
  return OkStatus();
}

Status LoopDisk::Unmount() {
  // A lazy unmount: a process that still has files open there (a node stopping) keeps them.
  SHOAL_RETURN_IF_ERROR(Run(fmt::format("umount --lazy '{}'", mount_point_)));
  mounted_ = false;
  return OkStatus();
}

}  // namespace shoal::cluster_test
