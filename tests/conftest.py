pytest_plugins = ["niceeval.testing.pytest_plugin"]
