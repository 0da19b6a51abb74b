// SIGINT and SIGTERM set a flag that long-running work checks, so an interrupted run stops at
// the next safe point and removes what it made, instead of dying midway.
#pragma once

namespace wm {

// Installs the handlers (once); the run then checks interrupted().
void catch_interrupts();
// The signal received, or 0.
int interrupted();

}  // namespace wm
