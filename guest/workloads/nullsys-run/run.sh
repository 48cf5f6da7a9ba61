# Cycles per system call: nullsys marks a phase around COUNT getppid calls.
nullsys 100000
