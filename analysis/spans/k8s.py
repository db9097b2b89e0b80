"""A Kubernetes pod's service from its name, for span exports that name the pod but not the
service. Kubernetes names a Deployment's pod ``<deployment>-<replica-set hash>-<suffix>``
(``orders-6d4b9c7f5-x2k8q``), a StatefulSet's ``<name>-<ordinal>`` (``redis-0``), a DaemonSet's
or a bare ReplicaSet's ``<name>-<suffix>``; the hash and the suffix are drawn from the alphabet
Kubernetes uses for generated names (consonants and the digits 2, 4-9: no vowels, so words such
as ``north`` or ``cache`` are never taken for a suffix)."""

from __future__ import annotations

import re

_SAFE = "[bcdfghjklmnpqrstvwxz2456789]"
_DEPLOYMENT = re.compile(rf"^(?P<name>[a-z0-9][a-z0-9.-]*?)-{_SAFE}{{6,10}}-{_SAFE}{{5}}$")
_SUFFIXED = re.compile(rf"^(?P<name>[a-z0-9][a-z0-9.-]*?)-{_SAFE}{{5}}$")
_ORDINAL = re.compile(r"^(?P<name>[a-z0-9][a-z0-9.-]*?[a-z])-\d{1,4}$")


def service_of_pod(pod: str) -> str | None:
    """The workload a pod name belongs to, or None when the name does not look generated."""
    p = pod.strip()
    for rx in (_DEPLOYMENT, _ORDINAL, _SUFFIXED):
        m = rx.match(p)
        if m:
            return m.group("name")
    return None
