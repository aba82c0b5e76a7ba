"""Runtime: devices, arrays (numpy memory on the CPU), kernel launches and the tape."""
