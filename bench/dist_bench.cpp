// all_reduce bus bandwidth: xylem::dist on host tensors against
// MPI_Allreduce called directly on the same bytes, 1 KiB to 256 MiB.
// Run under mpirun: mpirun -np 2 xylem_bench_dist [--quick] [--max-bytes N]
// [--json FILE] (--max-bytes: stop after that size, for the small calls alone).
// Bus bandwidth follows nccl-tests: bytes * 2 (n - 1) / n / time. Columns:
// MPI_Allreduce, MPI_Iallreduce polled with MPI_Test (the call xylem
// makes), xylem unchecked, xylem checked; ratios are MPI time / xylem time
// (above 1: xylem faster).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "xylem/dist.hpp"
#include "xylem/tensor.hpp"

namespace {

using namespace xylem_bench;

// Seconds per call on the slowest rank, for each of `calls`: every
// repetition runs each in turn (so drift and the machine's other load hit
// all alike), each started together (a barrier) and run `inner` times;
// the median of the repetitions.
std::vector<double> time_group(int reps, int inner, const std::vector<std::function<void()>>& calls) {
  for (const auto& f : calls) f();
  std::vector<std::vector<double>> times(calls.size());
  for (int r = 0; r < reps; ++r)
    for (std::size_t c = 0; c < calls.size(); ++c) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = Clock::now();
      for (int i = 0; i < inner; ++i) calls[c]();
      double t = seconds_since(t0) / inner;
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      times[c].push_back(t);
    }
  std::vector<double> result;
  for (auto& t : times) result.push_back(median(t));
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  // xylem starts MPI (thread level serialized: its calls, on its own
  // thread, never overlap this one's) with the settings it picks for its
  // calls, as in any program that leaves MPI to it, and finalises it at exit.
  CommonOptions o;
  std::size_t max_bytes = 0;
  parse_options(argc, argv, "mpirun -np N xylem_bench_dist [--quick] [--reps N] [--max-bytes N] [--json FILE]", 3, o,
                [&](std::string_view a, const char* value) {
                  if (a != "--max-bytes" || value == nullptr) return 0;
                  max_bytes = std::size_t(std::strtoull(value, nullptr, 10));
                  return 2;
                });
  {
    auto checked = xylem::dist::Communicator::world();
    xylem::dist::Options raw_options;
    raw_options.checked = false;
    auto raw = xylem::dist::Communicator::world(raw_options);
    const int n = checked.size();
    const bool lead = checked.rank() == 0;
    // The ratio is only as clean as the host is quiet: say what it was.
    std::string load[3] = {"?", "?", "?"};
    std::ifstream("/proc/loadavg") >> load[0] >> load[1] >> load[2];
    const unsigned cores = std::thread::hardware_concurrency();
    if (lead)
      std::printf("host: %u cores, load average %s %s %s\n", cores, load[0].c_str(), load[1].c_str(), load[2].c_str());
    if (lead)
      std::printf("all_reduce f32 sum, %d ranks over %.*s; bus bandwidth GB/s, then us per call (median of %d)\n"
                  "%10s %10s %10s %10s %10s %8s %8s %8s %9s %9s %9s\n",
                  n, int(checked.transport().size()), checked.transport().data(), o.reps, "bytes", "MPI", "MPI_I", "xylem",
                  "checked", "ratio", "ratio_ck", "ratio_I", "us_MPI", "us_xylem", "us_ck");
    std::ofstream json;
    if (lead && !o.json.empty()) json = open_json(o.json);
    if (json.is_open())
      json << "{\"benchmark\": \"dist_all_reduce\", \"ranks\": " << n << ", \"cores\": " << cores
           << ", \"results\": [\n";
    const std::size_t top = max_bytes > 0 ? max_bytes : o.quick ? (1u << 20) : (256u << 20);
    bool first = true;
    for (std::size_t bytes = 1024; bytes <= top; bytes *= 4) {
      const std::size_t count = bytes / sizeof(float);
      // Zeros: summing in place again and again stays finite.
      std::vector<float> buffer(count, 0.0f);
      auto t = xylem::Tensor::from(buffer);
      // About 0.2 s of calls per repetition at 10 GB/s, at least one.
      const int inner = int(std::max<std::size_t>(1, (std::size_t(2) << 30) / 10 / bytes / 4));
      const auto times = time_group(
          o.reps, inner,
          {[&] { MPI_Allreduce(MPI_IN_PLACE, buffer.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
           // The non-blocking call xylem makes, polled as xylem polls it:
           // tells the cost of the call from the cost of xylem around it.
           [&] {
             MPI_Request r;
             MPI_Iallreduce(MPI_IN_PLACE, buffer.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
             for (int done = 0; !done;) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
           },
           [&] { (void)raw.all_reduce(t).get(); }, [&] { (void)checked.all_reduce(t).get(); }});
      const double mpi = times[0], mpi_nb = times[1], ours = times[2], ours_checked = times[3];
      const double bus = double(bytes) * 2.0 * (n - 1) / n / 1e9;
      if (lead)
        std::printf("%10zu %10.3f %10.3f %10.3f %10.3f %8.3f %8.3f %8.3f %9.3f %9.3f %9.3f\n", bytes, bus / mpi,
                    bus / mpi_nb, bus / ours, bus / ours_checked, mpi / ours, mpi / ours_checked, mpi_nb / ours, mpi * 1e6,
                    ours * 1e6, ours_checked * 1e6);
      if (json.is_open())
        json << (first ? "" : ",\n") << "  {\"bytes\": " << bytes << ", \"mpi_s\": " << mpi << ", \"mpi_iallreduce_s\": " << mpi_nb << ", \"xylem_s\": " << ours
             << ", \"xylem_checked_s\": " << ours_checked << ", \"ratio\": " << mpi / ours
             << ", \"ratio_checked\": " << mpi / ours_checked << "}";
      first = false;
    }
    if (json.is_open()) json << "\n]}\n";
  }
  return 0;
}
