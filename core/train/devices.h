#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainlab {

// A device this machine can train on.
struct DeviceInfo
{
    std::string id;           // "cpu", "cuda:0", ...
    std::string name;         // human readable
    std::uint64_t memoryBytes = 0;
    int cores = 0;            // logical cores for the CPU
    std::string busId;        // CUDA devices: the PCI bus id ("00000000:18:00.0"), as NVML writes it
};

// Rank's part of a global batch of count images over world ranks: the first count % world ranks take one more, and
// the parts follow each other in rank order. The run's replicas and the range test's shares split batches so.
struct BatchShare
{
    std::int64_t offset = 0;   // from the batch's first image
    std::int64_t count = 0;
};
inline BatchShare batchShare(std::int64_t count, std::int64_t world, std::int64_t rank)
{
    const std::int64_t base = count / world, extra = count % world;
    return {rank * base + (rank < extra ? rank : extra), base + (rank < extra ? 1 : 0)};
}

std::vector<DeviceInfo> listDevices();
// cuda:N's PCI bus id at N, as this process's CUDA numbers its boards (after CUDA_VISIBLE_DEVICES); empty in a
// CPU build. What the device monitor needs to name NVML's GPUs by their cuda:N.
std::vector<std::string> cudaBusIds();
// Empty when present; otherwise why the id is not usable here.
std::string checkDevice(const std::string &id);
int logicalCores();
// "CPU build, LibTorch 1.13.1" or "CUDA 12.1 build, LibTorch 2.4.0".
std::string buildDescription();
std::string torchVersion();

} // namespace trainlab
