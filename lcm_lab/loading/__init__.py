"""Loading sources into the lab store: format detection and dispatch (:mod:`lcm_lab.loading.dispatch`)."""
