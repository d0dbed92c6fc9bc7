"""The agent's container image, built by ``agent/build-image.sh``: not the agent.

:mod:`.deps` finds the distributions the agent loads (``agent/requirements.in``) and
checks them in the image; :mod:`.rootfs` copies only what the agent loads into the image's
root filesystem; :mod:`.sbom` writes its CycloneDX SBOM. None of them is in the project's
distribution or in the image: ``build-image.sh`` copies this package into the build
context, and the build stage runs it from there.
"""
