"""wattsched subpackage."""
