// Runs fn(0..count-1) over the machine's cores; each index runs exactly once.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace wm {

template <typename Fn>
void parallel_for(size_t count, Fn&& fn) {
  size_t workers = std::min<size_t>(count, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < count; i = next++) fn(i);
  };
  std::vector<std::jthread> threads;
  for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
}

}  // namespace wm
