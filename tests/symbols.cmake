# daemon symbolizer: inlined frames, safe opens of client-named modules
