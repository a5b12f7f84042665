"""Packaging beyond what pyproject.toml can declare: the web app's templates, static files, migrations and
translations.

They stay top-level folders of the repository (``templates/``, ``static/``, ``migrations/``,
``locales/``), and a wheel
carries them inside the ``app`` package (``app/templates`` …), where ``app.resources`` finds them when no
checkout is around. Everything else about the project is in pyproject.toml.
"""

from pathlib import Path

from setuptools import find_packages, setup

#: Wheel package -> repository folder, for the folders the web app reads at run time.
RESOURCE_FOLDERS = {
    "app.templates": "templates",
    "app.static": "static",
    "app.migrations": "migrations",
    "app.locales": "locales",
}


def resource_packages() -> list[str]:
    """Every folder under the resource folders as a package name, so setuptools ships each one knowingly."""
    names = []
    for package, folder in RESOURCE_FOLDERS.items():
        for path in sorted([Path(folder), *Path(folder).rglob("*")]):
            if path.is_dir() and path.name != "__pycache__":
                names.append(".".join([package, *path.relative_to(folder).parts]))
    return names


setup(
    packages=find_packages(include=["elicitation*", "app*"]) + resource_packages(),
    package_dir=RESOURCE_FOLDERS,
    package_data={
        "elicitation.lab": ["data/*", "data/**/*"],
        **{package: ["**/*"] for package in RESOURCE_FOLDERS},
    },
    exclude_package_data={package: ["**/__pycache__/*", "**/*.pyc"] for package in RESOURCE_FOLDERS},
)
