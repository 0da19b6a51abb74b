"""stalepkg: an extension module and a generated module, each built for one CUDA major."""

from ._ext import build_major
