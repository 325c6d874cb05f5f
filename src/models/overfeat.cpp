// Overfeat "fast", as the convnet benchmarks time it (their classifier's
// dropouts are commented out, so it has none).
#include "models/builder.hpp"
#include "xylem/models.hpp"

namespace xylem::models {

layers::Sequential overfeat_fast(const Backend& b, const layers::ParameterOptions& options, std::uint64_t seed) {
  detail::Builder net(b, options, seed);
  net.conv(3, 96, 11, 4).relu().max_pool(2, 2);
  net.conv(96, 256, 5).relu().max_pool(2, 2);
  net.conv(256, 512, 3, 1, 1).relu();
  net.conv(512, 1024, 3, 1, 1).relu();
  net.conv(1024, 1024, 3, 1, 1).relu().max_pool(2, 2);
  net.flatten();
  net.linear(1024 * 6 * 6, 3072).relu();
  net.linear(3072, 4096).relu();
  net.linear(4096, 1000);
  return net.finish();
}

}  // namespace xylem::models
