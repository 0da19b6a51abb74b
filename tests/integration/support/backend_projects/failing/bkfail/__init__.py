"""bkfail: builds for CUDA 13 only."""
