// VGG-A (torchvision's vgg11): 3x3 convolutions in five stages.
#include <initializer_list>

#include "models/builder.hpp"
#include "xylem/models.hpp"

namespace xylem::models {

layers::Sequential vgg_a(const Backend& b, const layers::ParameterOptions& options, std::uint64_t seed) {
  constexpr int kPool = 0;  // a 2/2 max pool in the channel list, torchvision's "M"
  detail::Builder net(b, options, seed);
  std::int64_t channels = 3;
  for (int out : {64, kPool, 128, kPool, 256, 256, kPool, 512, 512, kPool, 512, 512, kPool}) {
    if (out == kPool) {
      net.max_pool(2, 2);
    } else {
      net.conv(channels, out, 3, 1, 1).relu();
      channels = out;
    }
  }
  net.flatten();
  net.linear(512 * 7 * 7, 4096).relu().dropout();
  net.linear(4096, 4096).relu().dropout();
  net.linear(4096, 1000);
  return net.finish();
}

}  // namespace xylem::models
