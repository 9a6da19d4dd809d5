# SPDX-License-Identifier: Apache-2.0
"""Signs requests with botocore's SigV4Auth, the independent signer the C++
signer is compared with. argv[1]: a JSON file holding a list of requests
{method, url, headers, body, access_key, secret_key, token, region, service,
amz_date}; prints a JSON list of their Authorization headers."""
import datetime
import json
import sys
from unittest import mock

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def sign(case):
    request = AWSRequest(method=case["method"], url=case["url"], headers=dict(case["headers"]),
                         data=case["body"].encode("utf-8"))
    credentials = Credentials(case["access_key"], case["secret_key"], case["token"] or None)
    when = datetime.datetime.strptime(case["amz_date"], "%Y%m%dT%H%M%SZ")
    # botocore stamps the request with the current time: pin it to the case's.
    with mock.patch("botocore.auth.get_current_datetime", return_value=when):
        SigV4Auth(credentials, case["service"], case["region"]).add_auth(request)
    return request.headers["Authorization"]


with open(sys.argv[1], encoding="utf-8") as cases:
    print(json.dumps([sign(case) for case in json.load(cases)]))
