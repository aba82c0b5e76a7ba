"""Pure IR → IR passes."""
