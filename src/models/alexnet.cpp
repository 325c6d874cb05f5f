// AlexNet ("One weird trick" variant, as torchvision's alexnet).
#include "models/builder.hpp"
#include "xylem/models.hpp"

namespace xylem::models {

layers::Sequential alexnet(const Backend& b, const layers::ParameterOptions& options, std::uint64_t seed) {
  detail::Builder net(b, options, seed);
  net.conv(3, 64, 11, 4, 2).relu().max_pool(3, 2);
  net.conv(64, 192, 5, 1, 2).relu().max_pool(3, 2);
  net.conv(192, 384, 3, 1, 1).relu();
  net.conv(384, 256, 3, 1, 1).relu();
  net.conv(256, 256, 3, 1, 1).relu().max_pool(3, 2);
  net.flatten();
  net.dropout().linear(256 * 6 * 6, 4096).relu();
  net.dropout().linear(4096, 4096).relu();
  net.linear(4096, 1000);
  return net.finish();
}

}  // namespace xylem::models
