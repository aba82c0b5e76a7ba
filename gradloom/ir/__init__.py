"""The scalar IR: primitives, nodes, builder, printer and verifier."""
