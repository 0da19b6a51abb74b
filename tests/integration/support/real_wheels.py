"""A corpus of real wheels from the Python package index, pinned by file name, size and sha256,
and the fetcher that keeps them in a cache outside the repository.

The corpus covers the tools that make the wheels wheelmerge meets: setuptools (with C, Rust
and mypyc extensions), meson-python, maturin, scikit-build-core and classic scikit-build,
hatchling, flit_core, poetry-core, pdm-backend, PyQt-builder, Bazel's wheelmaker, the old
`wheel` package's bdist_wheel, NVIDIA's CUDA Python and CUDA component wheels, PyTorch's,
CuPy's, Triton's and JAX's; and `.data/` directories of every kind but purelib (scripts,
headers, data, platlib). `test_real_wheels.py` demands that `wheelmerge verify` accepts each
of them.

Cache: `${WHEELMERGE_WHEEL_CACHE:-$HOME/.cache/wheelmerge}/real-wheels/`. A wheel is
downloaded to `NAME.part` (resumed with an HTTP range request when a previous download was cut
off), checked against its pinned size and sha256, then renamed into place; a cached wheel is
checked again each time it is used, and fetched anew when it no longer matches. Concurrent
fetchers of one wheel (several test runs, this script beside a test run) take turns through
a lock file. Only the standard library is used.

The pinned address is the index's file host. When it fails, the file is looked up by name on
the index's simple API (`PIP_INDEX_URL`, else https://pypi.org/simple/), so a mirror serves
too; the pinned sha256 decides either way.

As a script it fills the cache: `python tests/integration/support/real_wheels.py [--jobs N] [--list]
[NAME ...]` (`scripts/fetch-real-wheels.sh` runs it); it exits 1 naming each wheel and address
that could not be fetched.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import html.parser
import http.client
import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

FILE_HOST = "https://files.pythonhosted.org/packages/"
DEFAULT_INDEX = "https://pypi.org/simple/"
# Seconds without progress before one attempt gives up; attempts per address.
TIMEOUT = 60
ATTEMPTS = 3
CHUNK = 1 << 20


@dataclass(frozen=True)
class RealWheel:
    """One pinned wheel. `tool` says what built it and what it covers; `generator` is its
    WHEEL `Generator:` line and `data` the keys of its `.data/` directory, both checked
    against the archive by the tests."""

    name: str
    version: str
    size: int
    tool: str
    filename: str
    sha256: str
    location: str  # the folder of the file on FILE_HOST
    generator: str
    data: tuple[str, ...] = ()
    # A false claim its tags make, which `verify` refuses (docs/real-wheels.md, "What the build
    # checks caught"): (member, the message's end), confirmed with readelf by the test.
    refused: tuple[str, str] | None = None

    @property
    def url(self) -> str:
        return f"{FILE_HOST}{self.location}/{self.filename}"

    @property
    def id(self) -> str:
        platform = self.filename[:-len(".whl")].rsplit("-", 1)[1]
        return f"{self.name}-{self.version}" + ("" if "x86_64" in platform or platform == "any" else f"-{platform}")


# CPython 3.12 on x86_64 Linux where the project builds per platform, else the pure wheel.
# Sizes in bytes; the total is about 1.5 GB, two thirds of it torch (539 MB) and triton (286 MB).
WHEELS: tuple[RealWheel, ...] = (
    RealWheel(
        'PyYAML', '6.0.3', 807870, 'setuptools, C extension',
        'pyyaml-6.0.3-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl',
        'ba1cc08a7ccde2d2ec775841541641e4548226580ab850948cbfda66a1befcdc',
        '8b/9d/b3589d3877982d4f2329302ef98a8026e7f4443c765c46cfecc8858c6b4b',
        generator='setuptools (80.9.0)'),
    RealWheel(
        'MarkupSafe', '3.0.4', 22985, 'setuptools, C extension',
        'markupsafe-3.0.4-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl',
        '8e124f974786f831d6043728e38296969d3579db8896fe004682f5758e613581',
        '4f/a7/aeedb5140afa41fc74c225e9184ab96723a6e873b6ee1c9fede7283456d8',
        generator='setuptools (84.0.0)'),
    RealWheel(
        'psutil', '7.2.2', 155560, 'setuptools, abi3',
        'psutil-7.2.2-cp36-abi3-manylinux2010_x86_64.manylinux_2_12_x86_64.manylinux_2_28_x86_64.whl',
        '076a2d2f923fd4821644f5ba89f059523da90dc9014e85f8e45a5774ca5bc6f9',
        'b5/70/5d8df3b09e25bce090399cf48e452d25c935ab72dad19406c77f4e828045',
        generator='setuptools (75.3.3)'),
    RealWheel(
        'six', '1.17.0', 11050, 'setuptools, py2.py3',
        'six-1.17.0-py2.py3-none-any.whl',
        '4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274',
        'b7/ce/149a00dd41f10bc29e5921b496af8b574d8413afcd5e30dfa0ed46c2cc5e',
        generator='setuptools (75.6.0)'),
    RealWheel(
        'tomli', '2.5.0', 286435, 'setuptools with mypyc',
        'tomli-2.5.0-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl',
        '6cf74416bdc94ae458b14e37286c1073081850ac8459a00d0c5efef5d44294c6',
        '43/90/6090e706ff27a6f89f4a40578e3324b95c3cd8c4150868aabf33a8f414c3',
        generator='setuptools (84.0.0)'),
    RealWheel(
        'greenlet', '3.5.6', 621404, 'setuptools, .data/headers',
        'greenlet-3.5.6-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl',
        '975736b002ed080d124cf81a79cb7e05cb26d6b3f5c7a7b651c0fcce70353aa1',
        '66/6a/1594f3869c57c149abdb380492529e04d4c0229b5e4d79572c5bd0aaa673',
        generator='setuptools (84.0.0)', data=('headers',)),
    RealWheel(
        'virtualenvwrapper', '6.1.1', 22999, 'setuptools, .data/scripts',
        'virtualenvwrapper-6.1.1-py3-none-any.whl',
        '788352bf4fc10e244728ea08d094b5ddc39bdf913acc0474d2614020960260d3',
        '44/f1/685762afaaed801bba9e8be0a6553811399badadb6f4b6a5149002608202',
        generator='setuptools (75.1.0)', data=('scripts',)),
    RealWheel(
        'awscli', '1.46.3', 20232382, 'setuptools, .data/scripts, 8,082 members',
        'awscli-1.46.3-py3-none-any.whl',
        '94c561c1b1b2cf0978ec8d87d956c26c807555438593eec29ea90602b9518cfb',
        'e4/2d/adc2674fcb983720e77f5bfd76d89c0577a566dd89b2d29d298af11ea351',
        generator='setuptools (75.1.0)', data=('scripts',)),
    RealWheel(
        'Cython', '3.3.1', 3418124, 'setuptools',
        'cython-3.3.1-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl',
        '215669fd0ce792080cd4d0748db7e1e31f424b6706a6220d08339895e6a3a03a',
        '4a/c6/51ffdd996a1e6836792061ebe7ecf40480f1bd5693a721cea0ad4a689a81',
        generator='setuptools (82.0.1)'),
    RealWheel(
        'lxml', '6.1.3', 5105247, 'setuptools',
        'lxml-6.1.3-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
        '379f8a75cf6eb7eef0af074b55f49ab73b868388a98de14646abcdfa4564bb11',
        'db/36/aa413bc214dc4f785ad2b2ddd8cc99aae7062d49ab155e91e6011af00daf',
        generator='setuptools (84.0.0)'),
    RealWheel(
        'pillow', '13.0.0', 7144542, 'setuptools',
        'pillow-13.0.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl',
        '42d63be3af4f9b951b199b0a9d23365d37ab14687e6d77b74940432c8515c4ca',
        'e6/99/fdf65cc539e266ab93546c261bdf98411fe165c6e4e13f9dbf597097192b',
        generator='setuptools (84.0.0)'),
    RealWheel(
        'msgpack', '1.2.4', 475652, 'setuptools',
        'msgpack-1.2.4-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl',
        'c4d5bbdbea8f5669b3a734d6c226772804fb120848f99cbe63a0ddee63b049c9',
        '1e/d9/f59bd841fc2fd2b74dc50ce85860a6a25f58e588dd48946aeaf2862cf990',
        generator='setuptools (84.2.1)'),
    RealWheel(
        'tiktoken', '0.14.0', 1204197, 'setuptools-rust',
        'tiktoken-0.14.0-cp312-cp312-manylinux_2_28_x86_64.whl',
        '7896eea257fe497a2b7134474d909156c6744ce8da35bce88011a960e008aa0d',
        '51/11/9976ad86980a00cdef05e730a0127a2578a1bc6d11644d8d47246de2eb26',
        generator='setuptools (84.0.0)'),
    RealWheel(
        'grpcio', '1.85.1', 7362744, 'setuptools',
        'grpcio-1.85.1-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
        'a1a72d19c0ab84b4b73b6c47eeaade76d84b1973a51593ff1160a73df33d03d9',
        '00/8d/74a8649d2787dae0a661855cdf09a8e2238fa741689bb368ca1b4f6d5b6f',
        generator='setuptools (77.0.1)'),
    RealWheel(
        'setuptools', '84.2.1', 876263, 'setuptools',
        'setuptools-84.2.1-py3-none-any.whl',
        'ca140b45d5325a9478f880e351484f62fef15f336462e449ca0c03c873d589c2',
        'ef/55/6dc6d6bb953bdfc52519a0059592c52b6e3b8ad51cf8256dffceb55b0610',
        generator='setuptools (84.2.1)'),
    RealWheel(
        'numpy', '2.5.5', 15720599, 'meson-python',
        'numpy-2.5.5-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl',
        '704d819265e5d1064d932968e9ee85fff2103ccc78c05b878c06943ba27b8507',
        '99/61/522b973ba38987b22a4a71beaed2ea6ac9fd4f687baaa2bc9a45100625e0',
        generator='meson'),
    RealWheel(
        'scipy', '1.18.1', 35344199, 'meson-python',
        'scipy-1.18.1-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl',
        'f55fa87b6c612ecd6b058f167c53231b1d14e412efe361d3d6e38b3631c73218',
        'df/64/ff35eb9e54894cf471ff4716abd3c81eb0a0626869217ce3e6ba4ccf17d7',
        generator='meson'),
    RealWheel(
        'scikit-image', '0.26.0', 13561683, 'meson-python',
        'scikit_image-0.26.0-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl',
        '7df650e79031634ac90b11e64a9eedaf5a5e06fcd09bcd03a34be01745744466',
        'f4/a2/70401a107d6d7466d64b466927e6b96fcefa99d57494b972608e2f8be50f',
        generator='meson'),
    RealWheel(
        'pandas', '3.1.1', 12031410, 'meson-python',
        'pandas-3.1.1-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl',
        '028490c8ac2e03e18c9b08b7f3612e149b03570209bcf741d23833a7a5377ab2',
        '0b/b6/f9c0c52f7a2fcd828e336dd143001b0bcbc1276c90187dfa104458528e2e',
        generator='meson'),
    RealWheel(
        'ruff', '0.17.6', 10645279, 'maturin, binary in .data/scripts',
        'ruff-0.17.6-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
        'aa3b08254a732acba246891089a152c47c5733dc36b8ecb76ce8602f8326e5e4',
        'be/48/3df7d81249fd69ee6a49519b149fb5d11e13118fd7d0e8d65329a237087b',
        generator='maturin (1.15.0)', data=('scripts',)),
    RealWheel(
        'uv', '0.13.9', 17606939, 'maturin, binaries in .data/scripts',
        'uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
        'd7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19',
        '3d/aa/26d64642d808de4a652579ef950d7cd2d37f080a8babf9c67c6b75fc4c3f',
        generator='maturin (1.15.0)', data=('scripts',)),
    RealWheel(
        'pydantic-core', '2.50.4', 2261727, 'maturin',
        'pydantic_core-2.50.4-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
        'c81d98e27d9d9261909dcccab1ba5d6ea1c98b0bb9470e368604614fd1d36ddd',
        '91/23/e0c6e3cd09a0ac809953fea698c816b9f03bf0b35b6820c9553e4f5d85a8',
        generator='maturin (1.16.0)'),
    RealWheel(
        'orjson', '3.13.0', 130612, 'maturin',
        'orjson-3.13.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
        'bceadfd314bd238f584fc229a4bbaf0e573597e7a026dec5429fbf29fd66c641',
        'ea/8c/bb07c368abbf4021c4cd01c12edb526e00090f7f750ff1b88da6e6b6c7a6',
        generator='maturin (1.15.0)'),
    RealWheel(
        'cryptography', '50.0.2', 4719841, 'maturin, abi3',
        'cryptography-50.0.2-cp311-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
        '630ebfea3bf689d075f82316324ff7433dc447fe6bc1bfc76524b74b4a9567d2',
        '21/69/64cef1f702bf6657e0cc186ed1a2891d50d29fb41586b254e1c07adea261',
        generator='maturin (1.14.1)'),
    RealWheel(
        'pendulum', '3.3.0', 341605, 'maturin',
        'pendulum-3.3.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
        '73d4e6cdc93ac6492445bd495303b79227ea4f7e97001a69dbcf49008a942afa',
        'e7/20/3deb740903a37149bec0af02e490282d2ae8df152513c647783e5cc25fc9',
        generator='maturin (1.15.0)'),
    RealWheel(
        'pyzmq', '27.3.0', 855178, 'scikit-build-core, abi3',
        'pyzmq-27.3.0-cp312-abi3-manylinux_2_26_x86_64.manylinux_2_28_x86_64.whl',
        '858fe25231e0fd8612da142efde019faa5ef63fa150a821a27870e791b38c798',
        '2c/62/e4721d8b8b9de685323717489a408521067a786cabc2b73ccd91aa9b9077',
        generator='scikit-build-core 1.1.2'),
    RealWheel(
        'awkward-cpp', '57', 698757, 'scikit-build-core',
        'awkward_cpp-57-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl',
        'e5e6d7a25d4cf833398c6f63ca242f9683cd3a2851f223b02b80c883f39f9252',
        'db/52/105a2e7cae845a16d618334336895d7e2ffb91bb73e1c4f2de18d65e6889',
        generator='scikit-build-core 1.0.3'),
    RealWheel(
        'pybind11', '3.1.0', 319402, 'scikit-build-core, pure',
        'pybind11-3.1.0-py3-none-any.whl',
        'b8488090f8acffbcb6b5d6a85571a6827a0a2981ffb75e5a0b27b87c4a6b7dd0',
        '33/fd/8762f7ee3e4e4be6d1d846cffb4916dd9bb02b2f800d3603718a0efe494c',
        generator='scikit-build-core 1.0.3'),
    RealWheel(
        'ninja', '1.13.2', 183365, 'scikit-build-core, .data/scripts and a directory entry',
        'ninja-1.13.2-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
        '65a24341b5ac09fcadcc37082660be40a94174e51a937fabf6e2cae26225fa2c',
        '6e/53/ebfed7b689c338dd8ebeec9c0730c8d56821292f14e2536e5f3ef1a05744',
        generator='scikit-build-core 1.0.3', data=('scripts',)),
    RealWheel(
        'clang-format', '23.1.5', 1906891, 'scikit-build-core, py2.py3',
        'clang_format-23.1.5-py2.py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl',
        'd97ce49911ba8c89ef3f3c0735a9c7818e4780ab4812c67d1c5fcd829d16ae52',
        '0e/cc/06adcfb7dfaea4d2c1929202021d4afcdc26915dc75fc0c72d63855da553',
        generator='scikit-build-core 1.1.2'),
    RealWheel(
        'cmake', '4.4.4', 30245729, 'scikit-build-core, 4,260 members',
        'cmake-4.4.4-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
        'f773a0544c66370408f451acd487c2c643b0dfebb48c5d64f3638bc1bb820238',
        '7e/d5/664ea06d01864f25d6067f09fa218404e4d588edd5e495135ac91429fecb',
        generator='scikit-build-core 1.1.1'),
    RealWheel(
        'attrs', '26.1.0', 67548, 'hatchling',
        'attrs-26.1.0-py3-none-any.whl',
        'c647aa4a12dfbad9333ca4e71fe62ddc36f4e63b2d260a37a8b83d2f043ac309',
        '64/b4/17d4b0b2a2dc85a6df63d1157e028ed19f90d4cd97c36717afef2bc2f395',
        generator='hatchling 1.29.0'),
    RealWheel(
        'hatch', '1.18.2', 172627, 'hatchling',
        'hatch-1.18.2-py3-none-any.whl',
        '3991c741a2746d1e62345c403cb1f873a58d9c38fd25e3c3ad740437014f56b4',
        '92/b9/6b281cc90e60a095d16a990a3c54d18dfb2e39772e4c5d657e4950b9974d',
        generator='hatchling 1.33.0'),
    RealWheel(
        'ipykernel', '7.4.0', 123184, 'hatchling, .data/data',
        'ipykernel-7.4.0-py3-none-any.whl',
        'a6757f790ddc5a6006b813d82da1a9dbb65b3a00f2b6607df776418c6566ec1c',
        'a5/f8/8b5c10c7f36ab5a3b5c4703669e5b14e44e98782b58e535dd30670e8799a',
        generator='hatchling 1.32.4', data=('data',)),
    RealWheel(
        'notebook', '7.6.5', 5629845, 'hatchling, .data/data',
        'notebook-7.6.5-py3-none-any.whl',
        'b27b4af6e410e7456cfffc6fb5a764dcfb7a331408907d483024d6ddb5ec05f2',
        'db/fe/3388224bbb7d9e68ad0325af0164d05c3ae20a8cc78d5d91c218581911d9',
        generator='hatchling 1.33.0', data=('data',)),
    RealWheel(
        'pyinstaller', '6.22.3', 764974, 'hatchling, platform wheel',
        'pyinstaller-6.22.3-py3-none-manylinux2014_x86_64.whl',
        '451a4ae14b719365bf1a2f0a99dae7b3463060061c3a394c70d5264cfb439528',
        '7b/b6/dd21d61fc5e25377be24eabf13e99e4e46548a5abe2bf7b15d8b3d9cc74a',
        generator='hatchling 1.31.0'),
    RealWheel(
        'flit-core', '4.2.0', 48025, 'flit_core',
        'flit_core-4.2.0-py3-none-any.whl',
        '2bee22dc8ba89c2e35b4e1ad575e596aac945c85672dd8f3cad21b629036e044',
        'd9/f0/e546c28b937f094b354ca29b9060c5f1dd5043a332b2905049a51420b7a2',
        generator='flit 4.2.0'),
    RealWheel(
        'packaging', '26.3', 129956, 'flit_core',
        'packaging-26.3-py3-none-any.whl',
        'd7193f7c8e4e93f444fde0262bf90af30e16fa0ad0ad44cb553c87339b23cd1c',
        '63/34/ba1c580383c9eada3711951fef0795c80b829a078d72188184bcab9dd527',
        generator='flit 3.12.0'),
    RealWheel(
        'pip', '26.3', 1950951, 'flit_core',
        'pip-26.3-py3-none-any.whl',
        'f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13',
        '07/25/ee8c38ae72d66b844ce8eb9711ba905dba21ca1a8a0c960057c41cd23337',
        generator='flit 4.2.0'),
    RealWheel(
        'poetry-core', '2.5.0', 413562, 'poetry-core',
        'poetry_core-2.5.0-py3-none-any.whl',
        '98ee465b66f7e14bb9fbe68fb5e00d0cff184f036993ec94610ae4b5612f3add',
        'b7/25/7ed0a2ea4fe12f7fd0394387b5debbcd6fdbd06e5ac9daab96ba11471da8',
        generator='poetry-core 2.5.0'),
    RealWheel(
        'rich', '15.0.0', 310654, 'poetry-core',
        'rich-15.0.0-py3-none-any.whl',
        '33bd4ef74232fb73fe9279a257718407f169c09b78a87ad3d296f548e27de0bb',
        '82/3b/64d4899d73f91ba49a8c18a8ff3f0ea8f1c1d75481760df8c68ef5235bf5',
        generator='poetry-core 2.3.1'),
    RealWheel(
        'pdm-backend', '2.5.0', 199650, 'pdm-backend',
        'pdm_backend-2.5.0-py3-none-any.whl',
        '5b8746b567a16a1fd506ce66ee28e89d46374526f52238aa1b96cc2c08245c63',
        '5e/a6/c743c589188f9e45e1a7c8f3e2e725f9b5df5decd72779fbfc1695b45866',
        generator='pdm-backend (0.0.0+local)'),
    RealWheel(
        'cuda-bindings', '12.9.4', 12151019, 'NVIDIA cuda-python, setuptools',
        'cuda_bindings-12.9.4-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl',
        'fda147a344e8eaeca0c6ff113d2851ffca8f7dfc0a6c932374ee5c47caa649c8',
        'a9/c1/dabe88f52c3e3760d861401bb994df08f672ec893b8f7592dc91626adcf3',
        generator='setuptools (80.9.0)'),
    RealWheel(
        'cuda-bindings', '13.0.3', 12128303, 'NVIDIA cuda-python, setuptools',
        'cuda_bindings-13.0.3-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl',
        'cf41d9e69019939aa15296fa66ea7d3fdb8d2c6383f729f4b1156c8b37808a06',
        '21/ac/6b34452a3836c9fbabcd360689a353409d15f500dd9d9ced7f837549e383',
        generator='setuptools (80.9.0)'),
    RealWheel(
        'cuda-core', '1.2.2', 6610599, 'NVIDIA cuda-python, setuptools',
        'cuda_core-1.2.2-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl',
        '0b299eee52edece08b77428cfc22b33b29be1bc69c42878d2e6114031eac17e6',
        'f2/1c/8e1f7d42984d6b164521a1dec587f3cf6d1fc585ff929f1420faa07da9d3',
        generator='setuptools (1.2.2)'),
    # The same release for the other platforms cuda-core publishes: merged per CUDA major by
    # its publisher's script like the x86_64 one (test_windows_aarch64.py splits and re-merges
    # them), win_arm64 with its CUDA 13 build alone (and delvewheel's cuda_core.libs on Windows).
    RealWheel(
        'cuda-core', '1.2.2', 6212012, 'NVIDIA cuda-python, setuptools (aarch64)',
        'cuda_core-1.2.2-cp312-cp312-manylinux_2_24_aarch64.manylinux_2_28_aarch64.whl',
        '29f0b14a513374e47c6bbd7f1185d735a9a8c3573abf8da4e836805c3d6c7d82',
        '58/f0/437869ea39a6c97468d1141dcee862ccc3e409e8afabd78896e42213c867',
        generator='setuptools (1.2.2)'),
    RealWheel(
        'cuda-core', '1.2.2', 5955406, 'NVIDIA cuda-python, setuptools, delvewheel (win_amd64)',
        'cuda_core-1.2.2-cp312-cp312-win_amd64.whl',
        'd4e6aebf81ade4dd5cf8e2dcf3af25567921bb9439af051f1c2b250f0185d21b',
        '4a/7c/22f247c9357c6457281f4f51cceeb023cb47f1071a1d176a07c587e9f849',
        generator='setuptools (1.2.2)'),
    RealWheel(
        'cuda-core', '1.2.2', 2984288, 'NVIDIA cuda-python, setuptools, delvewheel (win_arm64, CUDA 13 only)',
        'cuda_core-1.2.2-cp312-cp312-win_arm64.whl',
        'c06a0cdbaba040833cff49f0671d5fe2465d553b839b65967e5f25065b5a8847',
        '67/b3/c1ed3ecb5bc1b11b1ffaeed369ba19fb5c1fec3a4204307baa127b9a888f',
        generator='setuptools (1.2.2)'),
    RealWheel(
        'cuda-pathfinder', '1.9.0', 63362, 'NVIDIA cuda-python, setuptools',
        'cuda_pathfinder-1.9.0-py3-none-any.whl',
        '622df7440f7702f36b7a02a1699aa0b084fe04034d9939188fee9b16d0c36366',
        'b6/80/7cf8bbe4a8844198fa64481ffc6642003770999b9ead27e99fc03484989a',
        generator='setuptools (84.2.1)'),
    RealWheel(
        'nvidia-cuda-runtime-cu12', '12.9.79', 3493179, 'NVIDIA CUDA component',
        'nvidia_cuda_runtime_cu12-12.9.79-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
        '25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3',
        'bc/46/a92db19b8309581092a3add7e6fceb4c301a3fd233969856a8cbf042cd3c',
        generator='setuptools (80.4.0)'),
    RealWheel(
        'nvidia-nvjitlink-cu12', '12.9.86', 39748338, 'NVIDIA CUDA component',
        'nvidia_nvjitlink_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl',
        'e3f1171dbdc83c5932a45f0f4c99180a70de9bd2718c1ab77d14104f6d7147f9',
        '46/0c/c75bbfb967457a0b7670b8ad267bfc4fffdf341c074e0a80db06c24ccfd4',
        generator='setuptools (80.9.0)'),
    RealWheel(
        'nvidia-cuda-runtime', '13.5.37', 2504024, 'NVIDIA CUDA 13 component',
        'nvidia_cuda_runtime-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
        'df2b79a8852f10d1fef8c848489c49eebb5754051bf870202a862831412b179d',
        '0b/7c/14b8f5518f8951e9dca57ea80f44f8ea8bcc8671812e6cc38009f3205e57',
        generator='setuptools (84.0.0)'),
    RealWheel(
        'nvidia-cuda-cccl', '13.3.5.0.6', 4113651, 'NVIDIA CUDA 13 component, headers, 2,360 members',
        'nvidia_cuda_cccl-13.3.5.0.6-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl',
        'd5230098fa2df5021e1a00c0c4eee41797671a91119d31e892463e5ccf3ee326',
        'a7/7e/4aa67cca14e0558b5a151a692f5ffe609930cdfc20d16c7a584de68424d4',
        generator='setuptools (84.0.0)'),
    RealWheel(
        'torch', '2.15.0', 539172785, 'PyTorch, scikit-build-core, 13,187 members',
        'torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl',
        '6d8c86f4e33a9f12a58149bd9b0d64351632b8eb44479be8ff85e5389932dd79',
        '42/43/612036bf387d34afff1ec77d3aabe0d16776f1727b00b8bc4540fe5472b1',
        generator='scikit-build-core 1.1.1'),
    RealWheel(
        'torchvision', '0.29.2', 7585493, 'PyTorch, setuptools; WHEEL tag linux_x86_64',
        'torchvision-0.29.2-py3-none-manylinux_2_28_x86_64.whl',
        '0875f7a23bd298813240f716c56df44ce72ddb45146589442a38edd0e1f59637',
        '92/74/699d28bed7453dbe40b09d37aab8f6cd75f19a77a77d5ab4588a4f3239e7',
        generator='setuptools (72.1.0)'),
    RealWheel(
        'torchaudio', '2.11.0', 1771992, 'PyTorch, setuptools',
        'torchaudio-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl',
        '6503c0bdb29daf2e6281bb70ea2dfe2c3553b782b619eb5d73bdadd8a3f7cecf',
        '88/d8/d6d0f896e064aa67377484efef4911cdcc07bce2929474e1417cc0af18c2',
        generator='setuptools (80.10.2)'),
    RealWheel(
        'cupy-cuda12x', '14.2.0', 136111459, 'CuPy, setuptools; WHEEL tag linux_x86_64',
        'cupy_cuda12x-14.2.0-cp312-cp312-manylinux2014_x86_64.whl',
        'f82141761f2c81905d49387464ae29438887956d99063381c93a1d5d1b7d32e8',
        '7c/5b/65124de2dbaf2e85109f611a41947e39acd6dd938751c04b4c4d7bf6fc82',
        generator='setuptools (82.0.1)'),
    RealWheel(
        'cupy-cuda13x', '14.2.0', 69439247, 'CuPy, setuptools; WHEEL tag linux_x86_64',
        'cupy_cuda13x-14.2.0-cp312-cp312-manylinux2014_x86_64.whl',
        '9aafadbe29db3d4285026044aafeb28f2a3de4bd0df70718ec6892b7d27a4ded',
        '7e/bf/c4c25e97552320451afdcd459d4b6e0b715459594e998b23051c06db64c3',
        generator='setuptools (82.0.1)'),
    RealWheel(
        'triton', '3.9.0', 285674620, 'setuptools, abi3',
        'triton-3.9.0-cp312-abi3-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl',
        '5e52ab4e2f1d64f0ac494c9aa723697b793f81a91c4cae4c36608ca0bc4267bf',
        '3f/c9/af85b25e0d98bd921a7646ad1db1c8746250ee04b8f1595982d29b6283cf',
        generator='setuptools (84.2.1)'),
    RealWheel(
        'jaxlib', '0.12.0.1', 86848931, 'Bazel build packed by setuptools',
        'jaxlib-0.12.0.1-cp312-cp312-manylinux_2_27_x86_64.whl',
        '78318e9ac79c92972f81c77090f557bdb4a5a49821751c6ee3f6a9c66a948842',
        '0d/e0/d39abd53ba408219062c1156bf3b9f965718f66bda8d625cb28453d63c2c',
        generator='setuptools (84.0.0)'),
    RealWheel(
        'protobuf', '7.36.2', 343223, 'Bazel wheelmaker, abi3',
        'protobuf-7.36.2-cp310-abi3-manylinux2014_x86_64.whl',
        '89f23aa53c24553a2416fd4fd1ec06f74fa42b14b546d8883128813f775bbfd2',
        'db/f3/3996583dd2906297a637af12114deddf7658af6e683fedb83be061983fb5',
        generator='bazel-wheelmaker 1.0'),
    RealWheel(
        'max', '26.7.0', 13328988, 'Bazel wheelmaker, .data/platlib',
        'max-26.7.0-cp312-cp312-manylinux_2_34_x86_64.whl',
        '3c14ab2cffba9cccea534c55be499542cd3e4f5cdd0e3bde444c23549e90b636',
        '42/33/895c81fd57b5aaf6351e901b6cb267fa83590eb3130a02a90238f443806f',
        generator='bazel-wheelmaker 1.0', data=('platlib',)),
    RealWheel(
        'PyQt6', '6.12.0', 8488924, 'PyQt-builder (sip), abi3',
        'pyqt6-6.12.0-cp310-abi3-manylinux_2_34_x86_64.whl',
        '1922bf7440310845a4fd06f4242288084dc26cf682a67e561b115570a8def3d1',
        'f9/cb/7557f6c559b392bb66a184eee802091676bf8e67a0d00f19a0dc10b5a7ae',
        generator='pyqtbuild 1.20.3'),
    RealWheel(
        'PyQt6-sip', '13.13.0', 301294, 'setuptools, manylinux1',
        'pyqt6_sip-13.13.0-cp312-cp312-manylinux1_x86_64.manylinux_2_5_x86_64.whl',
        '7429e63fc8279a0508ed5cbc1b33da76c15a61a06a745825e807a3604fbde4f2',
        'e3/d2/f2c77662be1f4ca6e35a8897d573b51a9e662e6b86a0d42c50afa9d46acf',
        generator='setuptools (84.0.0)'),
    RealWheel(
        'wheel', '0.24.0', 63270, 'wheel 0.24 bdist_wheel (2014), signed: RECORD.jws',
        'wheel-0.24.0-py2.py3-none-any.whl',
        '53a8b47d3db4ded8db41a1e9bbb77a1625074e7a4879bd0ebf97d6cb01576383',
        'e8/14/eaaac12b0432c984a27ad0050a5a0bedc6135df35a0f5f1f35228faf12d4',
        generator='bdist_wheel (0.24.0)'),
    RealWheel(
        'tbb', '2023.2.0', 6864088, 'Intel, wheel 0.37 bdist_wheel, .data/data',
        'tbb-2023.2.0-py2.py3-none-manylinux_2_28_x86_64.whl',
        '7d80615b6e970f11671fa05b6eaa9483ac864fbfe525ac280271a78b37870b7c',
        '59/fd/8ca476c7b2513b1e64e08d3f5404c8ed19b34d0213000b5e23b3a91676c2',
        generator='bdist_wheel (0.37.1)', data=('data',)),
    RealWheel(
        'mkl-include', '2026.2.0', 1320774, 'Intel, wheel 0.37 bdist_wheel, .data/data',
        'mkl_include-2026.2.0-py2.py3-none-manylinux_2_28_x86_64.whl',
        '889cc72057a1671fee1e9a8beb2fc4e0d222ba78c08b6d69584dae03fbec4822',
        '79/76/92504b3f0e1caa52c5dd1422a5f0ddac111b6339ccd2a3a87a657900553c',
        generator='bdist_wheel (0.37.1)', data=('data',)),
    RealWheel(
        'taichi', '1.7.4', 56298504, 'scikit-build (classic), .data/data',
        'taichi-1.7.4-cp312-cp312-manylinux_2_27_x86_64.whl',
        '6f1303aedae3ea25e33cef5f30259fc2f66c7f0287433c4e31bdb25fdcd4d81e',
        '74/74/c7aca2af38d38efe9ad8430864e97e87c0b0d4affa2ea6cc4aecbbcfdb0e',
        generator='skbuild 0.18.1', data=('data',),
        refused=('taichi/_lib/core/taichi_python.cpython-312-x86_64-linux-gnu.so',
                 "a native file that needs a newer glibc than the wheel's platform tags: expected GLIBC_2.27 or older, "
                 "as manylinux_2_27_x86_64 says, found GLIBC_2.34 of libc.so.6")),
)


class FetchError(Exception):
    """A wheel that could not be fetched; the message names the wheel and the addresses."""


def cache_dir() -> Path:
    base = os.environ.get("WHEELMERGE_WHEEL_CACHE") or Path.home() / ".cache" / "wheelmerge"
    return Path(base) / "real-wheels"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _matches(path: Path, wheel: RealWheel) -> bool:
    return path.stat().st_size == wheel.size and sha256_of(path) == wheel.sha256


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _request(url: str, headers: dict[str, str] | None = None) -> urllib.request.Request:
    return urllib.request.Request(url, headers={"User-Agent": "wheelmerge-tests", **(headers or {})})


def _download(url: str, part: Path, size: int) -> None:
    """Downloads `url` into `part`, going on from the bytes `part` already holds when the
    server answers a range request."""
    have = part.stat().st_size if part.exists() else 0
    if have >= size:  # complete or overlong: the caller checks it, or it starts over
        if have > size:
            part.unlink()
            have = 0
        else:
            return
    headers = {"Range": f"bytes={have}-"} if have else {}
    with urllib.request.urlopen(_request(url, headers), timeout=TIMEOUT) as response:
        resumed = bool(have) and response.status == 206
        if resumed and not response.headers.get("Content-Range", "").startswith(f"bytes {have}-"):
            part.unlink()
            raise FetchError(f"{url}: answered the range request with another range")
        with part.open("ab" if resumed else "wb") as out:
            while chunk := response.read(CHUNK):
                out.write(chunk)
                if out.tell() > size:
                    raise FetchError(f"{url}: more than the pinned {size} bytes")


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def _index_url(wheel: RealWheel) -> str:
    """The address of the wheel on the index's simple API (PEP 691 JSON or PEP 503 HTML)."""
    index = os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX
    project = re.sub(r"[-_.]+", "-", wheel.name).lower()
    page = urllib.parse.urljoin(index.rstrip("/") + "/", project + "/")
    accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
    with urllib.request.urlopen(_request(page, {"Accept": accept}), timeout=TIMEOUT) as response:
        base, body = response.url, response.read()
        if "json" in response.headers.get("Content-Type", ""):
            hrefs = [f["url"] for f in json.loads(body)["files"]]
        else:
            links = _Links()
            links.feed(body.decode("utf-8", "replace"))
            hrefs = links.hrefs
    for href in hrefs:
        url = urllib.parse.urljoin(base, href).split("#", 1)[0]
        if urllib.parse.unquote(url.rsplit("/", 1)[-1]) == wheel.filename:
            return url
    raise FetchError(f"{page} does not list {wheel.filename}")


def _addresses(wheel: RealWheel) -> Iterator[str]:
    yield wheel.url
    yield _index_url(wheel)


def fetch(wheel: RealWheel, directory: Path | None = None) -> Path:
    """The cached copy of `wheel`, checked against its pinned size and sha256; downloaded when
    missing or damaged. Raises FetchError naming the wheel and every address tried."""
    directory = directory or cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / wheel.filename
    part = directory / (wheel.filename + ".part")
    with _locked(directory / f".{wheel.filename}.lock"):
        if target.exists():
            if _matches(target, wheel):
                return target
            target.unlink()  # damaged or replaced: fetch it anew
        problems: list[str] = []
        addresses = _addresses(wheel)
        while True:
            try:
                url = next(addresses)
            except StopIteration:
                break
            except (OSError, ValueError, KeyError, http.client.HTTPException, FetchError) as e:
                problems.append(f"looking it up on the index: {e}")
                break
            for _ in range(ATTEMPTS):
                try:
                    _download(url, part, wheel.size)
                except urllib.error.HTTPError as e:
                    problems.append(f"{url}: HTTP {e.code} {e.reason}")
                    if e.code == 416:
                        part.unlink(missing_ok=True)
                        continue
                    break  # the server's answer will not change
                except (OSError, http.client.HTTPException, FetchError) as e:
                    problems.append(f"{url}: {e}")
                    continue  # cut off: the next attempt resumes
                got = part.stat().st_size
                if got < wheel.size:
                    problems.append(f"{url}: ended after {got} of {wheel.size} bytes")
                    continue
                digest = sha256_of(part)
                if digest == wheel.sha256:
                    os.replace(part, target)
                    return target
                problems.append(f"{url}: sha256 {digest}, pinned {wheel.sha256}")
                part.unlink()
        raise FetchError(f"could not fetch {wheel.name} {wheel.version} ({wheel.filename}) "
                         f"from {wheel.url}:\n  " + "\n  ".join(problems))


def fetch_all(wheels: Iterable[RealWheel] = WHEELS, directory: Path | None = None,
              jobs: int = 4) -> dict[str, Path | FetchError]:
    """Fetches (or checks the cached copies of) several wheels side by side: file name ->
    path, or the FetchError of that wheel."""
    def one(wheel: RealWheel) -> Path | FetchError:
        try:
            return fetch(wheel, directory)
        except FetchError as e:
            return e

    wheels = list(wheels)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return dict(zip((w.filename for w in wheels), pool.map(one, wheels)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fill the cache of the real-wheel corpus.")
    parser.add_argument("names", nargs="*", help="only these projects (default: all)")
    parser.add_argument("--jobs", type=int, default=4, help="downloads at once (default 4)")
    parser.add_argument("--list", action="store_true", help="print the corpus and exit")
    args = parser.parse_args(argv)
    chosen = [w for w in WHEELS if not args.names or w.name in args.names]
    if unknown := set(args.names) - {w.name for w in WHEELS}:
        parser.error(f"not in the corpus: {', '.join(sorted(unknown))}")
    if args.list:
        for w in chosen:
            print(f"{w.name:26} {w.version:12} {w.size:>11,}  {w.tool}\n{'':26} {w.filename}")
        print(f"{len(chosen)} wheels, {sum(w.size for w in chosen):,} bytes")
        return 0
    directory = cache_dir()
    before = {w.filename for w in chosen if (directory / w.filename).exists()}
    start = time.monotonic()
    results = fetch_all(chosen, directory, args.jobs)
    seconds = time.monotonic() - start
    failed = [r for r in results.values() if isinstance(r, FetchError)]
    fetched = [w for w in chosen if w.filename not in before
               and not isinstance(results[w.filename], FetchError)]
    print(f"{directory}: {len(chosen) - len(failed)} of {len(chosen)} wheels present and matching "
          f"their sha256; downloaded {len(fetched)} ({sum(w.size for w in fetched):,} bytes) "
          f"in {seconds:.1f} s")
    for error in failed:
        print(f"error: {error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
