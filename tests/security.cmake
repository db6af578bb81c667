# hostile clients: idle/per-uid connection limits, EMFILE, a second local user
