"""settingsprobe: its generated module _settings records the backend's config_settings."""
