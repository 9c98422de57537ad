"""The TPU compiler on a host without a TPU: libtpu in a child process (`compiler`,
`compile_child`), the compile check of the `lower` op (`check`) and the compile-only ranking of
`autotune` (`autotune_compiled`)."""
