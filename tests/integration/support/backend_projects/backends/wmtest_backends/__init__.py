"""Inner PEP 517 backends for test_backend.py, packed into a wheel (wmtest-backends) at test time
and installed into the build environment from a --find-links directory."""
