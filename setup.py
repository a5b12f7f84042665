"""Packaging beyond what pyproject.toml can declare: the web app's templates, static files and migrations.

They stay top-level folders of the repository (``templates/``, ``static/``, ``migrations/``), and a wheel
carries them inside the ``app`` package (``app/templates`` …), where ``app.resources`` finds them when no
checkout is around. Everything else about the project is in pyproject.toml.
"""

from setuptools import find_packages, setup

#: Wheel package -> repository folder, for the folders the web app reads at run time.
RESOURCE_FOLDERS = {"app.templates": "templates", "app.static": "static", "app.migrations": "migrations"}

setup(
    packages=find_packages(include=["elicitation*", "app*"]) + list(RESOURCE_FOLDERS),
    package_dir=RESOURCE_FOLDERS,
    package_data={
        "elicitation.lab": ["data/*", "data/**/*"],
        **{package: ["**/*"] for package in RESOURCE_FOLDERS},
    },
    exclude_package_data={package: ["**/__pycache__/*", "**/*.pyc"] for package in RESOURCE_FOLDERS},
)
