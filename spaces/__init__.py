"""Data: shipped arrays and design spaces (YAML), installed as ``explorer.spaces`` and read through package resources."""
