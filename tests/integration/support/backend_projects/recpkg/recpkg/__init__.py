"""recpkg: a pure Python package whose generated module _variant says which build it is."""
