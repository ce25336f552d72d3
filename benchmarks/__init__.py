"""Benchmarks of the book (``make bench``): ratios measured side by side in one run."""
