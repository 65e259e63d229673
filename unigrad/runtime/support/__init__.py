"""ctypes bindings of system libraries a runtime backend drives (OpenCL's ICD loader, ...): loaded on first use, so
importing a binding never fails on a machine without the library; a missing library is a clear error then."""
