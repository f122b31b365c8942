"""Data: the network zoo (YAML), installed as ``explorer.models`` and read through package resources."""
