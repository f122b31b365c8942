"""Hardware arrays (``spaces/arrays/*.yaml``): data only."""
