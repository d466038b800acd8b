"""Static race and barrier checks on the PTX nvcc emits (``verifier lint``, check class ``static``)."""
