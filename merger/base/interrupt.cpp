#include "merger/base/interrupt.hpp"

#include <atomic>
#include <csignal>

namespace wm {

namespace {
std::atomic<int> received{0};
extern "C" void on_signal(int signal) { received.store(signal); }
}  // namespace

void catch_interrupts() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int interrupted() { return received.load(); }

}  // namespace wm
