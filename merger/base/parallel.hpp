// Runs fn(0..count-1) over the machine's cores (or at most `max_workers` threads, when given);
// each index runs exactly once.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace wm {

// An exception thrown by fn stops the remaining indices and is rethrown in the calling thread
// once every worker has ended (an exception escaping a thread would abort the process).
template <typename Fn>
void parallel_for(size_t count, Fn&& fn, size_t max_workers = 0) {
  if (max_workers == 0) max_workers = std::max(1u, std::thread::hardware_concurrency());
  size_t workers = std::min<size_t>(count, max_workers);
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_lock;
  auto work = [&] {
    try {
      for (size_t i = next++; i < count; i = next++) fn(i);
    } catch (...) {
      next = count;
      std::lock_guard lock(error_lock);
      if (!error) error = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> threads;
    for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
    work();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace wm
