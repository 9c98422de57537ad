"""The worker's ops, one module each: `evaluate`, `lower`, `profile`, `autotune`, `reference`,
`generate`; `prepared` is what every op starts from."""
