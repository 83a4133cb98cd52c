// CUB, the reference a GPU scan library is measured against, on the cases of
// prefixscan's GPU benchmarks (benchmarks/primitives.py, `prefixscan bench --device cuda`):
//
//   scan        cub::DeviceScan::InclusiveSum, int32 / float32 / int64 / float64
//   segmented   cub::DeviceScan::InclusiveSumByKey, int32 / float32 values, int32 keys
//               (segment lengths 1, 32, 1000, 10^6)
//   compact     cub::DeviceSelect::Flagged, float32 / int64, 1% / 50% / 99% kept
//   partition   cub::DevicePartition::Flagged, float32 / int64
//
// Each case is timed with CUDA events (median of the repeats, after a warm-up) next
// to a device-to-device copy of the bytes it moves, (read + written) / 2 bytes copied,
// interleaved in the same process; the table gives both and their ratio, the same
// roof as prefixscan's benchmarks.  Built and run on the GPU machine by
// `bash benchmarks/device.sh cub`:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 benchmarks/peers/cub_peers.cu -o /tmp/cub_peers
//   /tmp/cub_peers [log2 n = 27] [repeats = 15]
//
// CUB comes with the CUDA toolkit (include/cccl/cub); no other dependency.

#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <type_traits>
#include <vector>

#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudaError_t status_ = (call);                                                         \
    if (status_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,                  \
                   cudaGetErrorString(status_));                                          \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

namespace {

__device__ uint32_t mix(uint64_t i, uint32_t seed) {
  // splitmix64's finalizer: independent-looking values from an index
  uint64_t z = i + 0x9E3779B97F4A7C15ull * (seed + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>(z ^ (z >> 31));
}

template <typename T>
__global__ void fill_values(T* x, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = static_cast<T>(int32_t(mix(i, seed) % 2001u) - 1000);
}

__global__ void fill_flags(char* flags, int64_t n, uint32_t per_million, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    flags[i] = (mix(i, seed) % 1000000u) < per_million;
}

__global__ void fill_keys(int32_t* keys, int64_t n, int64_t segment) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    keys[i] = static_cast<int32_t>(i / segment);
}

constexpr int kGrid = 4096, kBlock = 256;

// Median milliseconds of `repeats` runs of `run` (one warm-up first), CUDA events.
double median_ms(const std::function<void()>& run, int repeats) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  run();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> times;
  for (int r = 0; r < repeats; ++r) {
    CHECK(cudaEventRecord(start));
    run();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Buffers {
  void* src = nullptr;
  void* dst = nullptr;
  void* temp = nullptr;
  size_t temp_bytes = 0;
};

// One row: the case's time, the copy of its (read + written) / 2 bytes, their ratio.
void report(const char* label, double ms, size_t moved_bytes, Buffers& roof, int repeats) {
  size_t half = moved_bytes / 2;
  double copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(roof.dst, roof.src, half, cudaMemcpyDeviceToDevice)); },
                             repeats);
  std::printf("| %s | %.3f | %.3f | %.2f |\n", label, ms, copy_ms, copy_ms / ms);
  std::fflush(stdout);
}

void ensure_temp(Buffers& b, size_t bytes) {
  if (bytes <= b.temp_bytes) return;
  if (b.temp) CHECK(cudaFree(b.temp));
  CHECK(cudaMalloc(&b.temp, bytes));
  b.temp_bytes = bytes;
}

template <typename T>
struct ToDouble {
  __host__ __device__ double operator()(T v) const { return static_cast<double>(v); }
};

// The sum of x's n elements (as double: exact for the values filled in here), by CUB's reduction.
template <typename T>
double total_of(const T* x, int64_t n, Buffers& b) {
  double* sum;
  CHECK(cudaMalloc(&sum, sizeof(double)));
  size_t bytes = 0;
  auto as_double = thrust::make_transform_iterator(x, ToDouble<T>{});
  CHECK(cub::DeviceReduce::Sum(nullptr, bytes, as_double, sum, n));
  ensure_temp(b, bytes);
  CHECK(cub::DeviceReduce::Sum(b.temp, bytes, as_double, sum, n));
  double host = 0;
  CHECK(cudaMemcpy(&host, sum, sizeof host, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(sum));
  return host;
}

template <typename T>
T last_of(const T* y, int64_t n) {
  T host;
  CHECK(cudaMemcpy(&host, y + n - 1, sizeof host, cudaMemcpyDeviceToHost));
  return host;
}

template <typename T>
void scan_case(const char* name, int64_t n, Buffers& roof, int repeats) {
  T *x, *y;
  CHECK(cudaMalloc(&x, n * sizeof(T)));
  CHECK(cudaMalloc(&y, n * sizeof(T)));
  fill_values<<<kGrid, kBlock>>>(x, n, 1);
  CHECK(cudaGetLastError());
  size_t bytes = 0;
  CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, x, y, n));
  ensure_temp(roof, bytes);
  double ms = median_ms([&] { CHECK(cub::DeviceScan::InclusiveSum(roof.temp, bytes, x, y, n)); }, repeats);
  // Integers: the last element is the total (wrapped to T), checked against a reduction in double.
  if constexpr (std::is_integral_v<T>) {
    if (static_cast<T>(static_cast<int64_t>(total_of(x, n, roof))) != last_of(y, n)) {
      std::fprintf(stderr, "scan %s: the last element is not the total\n", name);
      std::exit(1);
    }
  }
  char label[96];
  std::snprintf(label, sizeof label, "scan %s", name);
  report(label, ms, 2 * n * sizeof(T), roof, repeats);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
}

template <typename T>
void segmented_case(const char* name, int64_t n, int64_t segment, Buffers& roof, int repeats) {
  T *x, *y;
  int32_t* keys;
  CHECK(cudaMalloc(&x, n * sizeof(T)));
  CHECK(cudaMalloc(&y, n * sizeof(T)));
  CHECK(cudaMalloc(&keys, n * sizeof(int32_t)));
  fill_values<<<kGrid, kBlock>>>(x, n, 2);
  fill_keys<<<kGrid, kBlock>>>(keys, n, segment);
  CHECK(cudaGetLastError());
  size_t bytes = 0;
  CHECK(cub::DeviceScan::InclusiveSumByKey(nullptr, bytes, keys, x, y, n));
  ensure_temp(roof, bytes);
  double ms = median_ms([&] { CHECK(cub::DeviceScan::InclusiveSumByKey(roof.temp, bytes, keys, x, y, n)); },
                        repeats);
  char label[96];
  std::snprintf(label, sizeof label, "segmented sum by int32 keys %s, segments of %lld", name,
                static_cast<long long>(segment));
  report(label, ms, n * (2 * sizeof(T) + sizeof(int32_t)), roof, repeats);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(keys));
}

template <typename T>
void select_cases(const char* name, int64_t n, Buffers& roof, int repeats) {
  T *x, *y;
  char* flags;
  int64_t* count;
  CHECK(cudaMalloc(&x, n * sizeof(T)));
  CHECK(cudaMalloc(&y, n * sizeof(T)));
  CHECK(cudaMalloc(&flags, n));
  CHECK(cudaMalloc(&count, sizeof(int64_t)));
  fill_values<<<kGrid, kBlock>>>(x, n, 3);
  CHECK(cudaGetLastError());
  for (uint32_t per_million : {10000u, 500000u, 990000u}) {
    fill_flags<<<kGrid, kBlock>>>(flags, n, per_million, 4);
    CHECK(cudaGetLastError());
    size_t bytes = 0;
    CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, x, flags, y, count, n));
    ensure_temp(roof, bytes);
    double ms = median_ms([&] { CHECK(cub::DeviceSelect::Flagged(roof.temp, bytes, x, flags, y, count, n)); },
                          repeats);
    int64_t kept = 0;
    CHECK(cudaMemcpy(&kept, count, sizeof kept, cudaMemcpyDeviceToHost));
    if (static_cast<double>(kept) != total_of(flags, n, roof)) {  // the count is the number of flags set
      std::fprintf(stderr, "compact %s: %lld kept, not the number of flags set\n", name, static_cast<long long>(kept));
      std::exit(1);
    }
    char label[96];
    std::snprintf(label, sizeof label, "compact %s, %u%% kept", name, per_million / 10000);
    report(label, ms, n * (sizeof(T) + 1) + kept * sizeof(T), roof, repeats);

    CHECK(cub::DevicePartition::Flagged(nullptr, bytes, x, flags, y, count, n));
    ensure_temp(roof, bytes);
    ms = median_ms([&] { CHECK(cub::DevicePartition::Flagged(roof.temp, bytes, x, flags, y, count, n)); },
                   repeats);
    std::snprintf(label, sizeof label, "partition %s, %u%% selected", name, per_million / 10000);
    report(label, ms, n * (2 * sizeof(T) + 1), roof, repeats);
  }
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(flags));
  CHECK(cudaFree(count));
}

}  // namespace

int main(int argc, char** argv) {
  int log2n = argc > 1 ? std::atoi(argv[1]) : 27;
  int repeats = argc > 2 ? std::atoi(argv[2]) : 15;
  int64_t n = int64_t(1) << log2n;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# CUB peers: %s, CUB %d.%d.%d, n = 2^%d, median of %d\n\n", prop.name, CUB_MAJOR_VERSION,
              CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION, log2n, repeats);
  std::printf("| case | CUB (ms) | copy of the same bytes (ms) | ratio to copy |\n|---|---:|---:|---:|\n");
  Buffers roof;
  size_t largest = n * (2 * sizeof(int64_t) + 1);  // the most bytes a case moves
  CHECK(cudaMalloc(&roof.src, largest / 2 + 16));
  CHECK(cudaMalloc(&roof.dst, largest / 2 + 16));
  scan_case<int32_t>("int32", n, roof, repeats);
  scan_case<float>("float32", n, roof, repeats);
  scan_case<int64_t>("int64", n, roof, repeats);
  scan_case<double>("float64", n, roof, repeats);
  for (int64_t segment : {int64_t(1), int64_t(32), int64_t(1000), int64_t(1000000)}) {
    segmented_case<int32_t>("int32", n, segment, roof, repeats);
    segmented_case<float>("float32", n, segment, roof, repeats);
  }
  select_cases<float>("float32", n, roof, repeats);
  select_cases<int64_t>("int64", n, roof, repeats);
  CHECK(cudaFree(roof.src));
  CHECK(cudaFree(roof.dst));
  if (roof.temp) CHECK(cudaFree(roof.temp));
  return 0;
}
