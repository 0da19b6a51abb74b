"""A package whose CUDA 12 build fails."""
