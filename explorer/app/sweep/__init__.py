"""Design-space sweeps: a YAML grid of points, run in parallel, cached, tabulated and plotted."""
