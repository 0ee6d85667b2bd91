"""Local answers for the files rocm-docs-core reads from GitHub.

rocm-docs-core fetches ``latest_version.txt``, ``release_candidate.txt``,
``rocm_toolkits.txt`` and ``google_site_verification.txt`` from
``raw.githubusercontent.com/ROCm/rocm-docs-core`` when the configuration
is read and again for every page; no setting turns this off, and without
a network one of them is retried for ten minutes.  Importing this module
(before ``ROCmDocs(...).setup()``) answers exactly those URLs from
:data:`ANSWERS`; every other request goes out as usual.
"""

from __future__ import annotations

import requests
from requests.adapters import HTTPAdapter

DATA_URL = "https://raw.githubusercontent.com/ROCm/rocm-docs-core/"

#: File name -> text.  Any other file of those branches: empty.
ANSWERS = {
    "latest_version.txt": "ROCm: latest",
    "release_candidate.txt": "",
    "rocm_toolkits.txt": "",
    "google_site_verification.txt": "",
}

_send = HTTPAdapter.send


def _answer(self, request, **kwargs):
    if not str(request.url).startswith(DATA_URL):
        return _send(self, request, **kwargs)
    response = requests.Response()
    response.status_code = 200
    response.url = request.url
    response.request = request
    response.encoding = "utf-8"
    name = request.url.rsplit("/", 1)[-1]
    response._content = ANSWERS.get(name, "").encode("utf-8")
    return response


HTTPAdapter.send = _answer
