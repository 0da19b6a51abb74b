"""envprobe: its generated module _buildenv records the environment of the build."""
