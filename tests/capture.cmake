# shim capture: call paths, module table, intern, signals, longjmp
