#pragma once

// Overloaded{lambdas...}: one visitor for std::visit made of several lambdas, one per
// alternative of the variant.

namespace shoal {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

}  // namespace shoal
