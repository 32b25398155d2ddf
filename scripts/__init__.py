"""The course's maintenance scripts; tests import them as `scripts.build_site` and so on."""
