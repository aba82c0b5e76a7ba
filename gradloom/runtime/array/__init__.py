"""The one array class (`wp.array`: memory + layout + dtype) and its operations: host memory
methods, storage helpers, indexed arrays, structs, foreign arrays, copy-on-write watches."""
