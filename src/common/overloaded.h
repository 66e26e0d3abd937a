#pragma once

// Overloaded{lambdas...}: one visitor for std::visit made of several lambdas, one per
// alternative of the variant.

namespace shoal {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
// clang 14 (the thread-safety check) does not deduce an aggregate's template arguments.
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace shoal
