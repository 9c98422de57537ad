"""What a program costs and what it does: facts about its pallas_calls (`facts`), tracing
(`trace`), HBM traffic (`traffic`), the whole program's work (`work`, `eqn`), XLA's and the
kernels' estimates (`cost`) and profiles (`profile`, `device_events`)."""
