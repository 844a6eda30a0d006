"""BFT-SMaRt's replica-to-replica TLS on this machine's JDK, with and without the TLS work-around.

Peloton-Smart's replicas talk TLS 1.2 with the cipher suite their ``system.config`` names,
``TLS_ECDHE_ECDSA_WITH_NULL_SHA``, and the key pair in ``keysSSL_TLS/EC_KeyPair_256.pkcs12``. A JDK that lists
``NULL`` in ``jdk.tls.disabledAlgorithms`` (OpenJDK 17 does) refuses that handshake; the guide has the evaluator edit
the JDK's ``java.security``. reprobook puts the work-around in BFT-SMaRt's own ``java.security`` instead
(`reprobook.papers.pesto.systems.tls_work_around`), which the agent's JVM reads once the recorded patch takes the
quotes off its path. Here a small Java program does what ``ServersCommunicationLayer`` and ``ServerConnection`` do
(the keystore loaded with BFT-SMaRt's password, a server socket that needs client authentication, a client that
starts the handshake), with the artifact's own keystore, ``java-config`` and BouncyCastle jar from the pinned commit.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from reprobook.papers.pesto.systems import tls_work_around
from tests.integration.conftest import unavailable
from tests.support.pequin_standin import PEQUIN_COMMIT, PEQUIN_GIT

LIBRARY = "src/store/bftsmartstore/library"

HANDSHAKE = r"""
import java.io.*;
import java.net.*;
import java.security.*;
import java.util.*;
import javax.net.ssl.*;

public class Handshake {
    public static void main(String[] args) throws Exception {
        String base = args[0];
        Properties conf = new Properties();
        try (FileInputStream in = new FileInputStream(base + "/java-config/system.config")) { conf.load(in); }
        String[] ciphers = conf.getProperty("system.ssltls.enabled_ciphers").trim().split(",");
        char[] secret = "MySeCreT_2hMOygBwY".toCharArray();   // BFT-SMaRt's SECRET
        KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
        try (FileInputStream in = new FileInputStream(base + "/java-config/keysSSL_TLS/"
                + conf.getProperty("system.ssltls.key_store_file").trim())) { ks.load(in, secret); }
        String algorithm = Security.getProperty("ssl.KeyManagerFactory.algorithm");
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(algorithm);
        kmf.init(ks, secret);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(algorithm);
        tmf.init(ks);
        SSLContext context = SSLContext.getInstance(conf.getProperty("system.ssltls.protocol_version").trim());
        context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), new SecureRandom());
        SSLServerSocket server = (SSLServerSocket) context.getServerSocketFactory()
                .createServerSocket(0, 10, InetAddress.getByName("127.0.0.1"));
        server.setEnabledCipherSuites(ciphers);
        server.setNeedClientAuth(true);
        Thread accept = new Thread(() -> {
            try (SSLSocket s = (SSLSocket) server.accept()) { s.startHandshake(); s.getOutputStream().write(7); }
            catch (IOException e) { }
        });
        accept.start();
        try (SSLSocket client = (SSLSocket) context.getSocketFactory().createSocket("127.0.0.1", server.getLocalPort())) {
            client.setEnabledCipherSuites(ciphers);
            client.startHandshake();
            System.out.println("handshake: " + client.getSession().getCipherSuite() + " " + client.getInputStream().read());
        } catch (SSLException e) {
            System.out.println("refused: " + e.getMessage());
        }
        server.close();
    }
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    if shutil.which("javac") is None or shutil.which("java") is None:
        unavailable("a JDK (javac and java) is needed: .ci/install-system-deps.sh installs openjdk-17-jdk-headless")
    if not PEQUIN_GIT.is_dir():
        unavailable(f"the Pequin git mirror {PEQUIN_GIT} is absent")
    d = tmp_path_factory.mktemp("tls")
    archive = subprocess.run(["git", "-C", str(PEQUIN_GIT), "archive", PEQUIN_COMMIT, f"{LIBRARY}/java-config",
                              f"{LIBRARY}/lib"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(d)], input=archive, check=True)
    (d / "Handshake.java").write_text(HANDSHAKE)
    subprocess.run(["javac", "-d", str(d), str(d / "Handshake.java")], check=True, capture_output=True, timeout=300)
    return d


def _handshake(program: Path, base: Path) -> str:
    jars = ":".join(str(j) for j in sorted((program / LIBRARY / "lib").glob("*.jar")))
    # as the patched agent starts the JVM: BFT-SMaRt's own java.security read on top of the JDK's
    r = subprocess.run(["java", f"-Djava.security.properties={base}/java-config/java.security", "-cp",
                        f"{program}:{jars}", "Handshake", str(base)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


def test_the_replicas_tls_handshake_is_refused_by_the_jdk_and_made_with_the_work_around(program, tmp_path):
    authors = program / LIBRARY
    refused = _handshake(program, authors)
    # OpenJDK 17 lists NULL: the guide's "SSLHandshakeException: No appropriate protocol"
    assert refused.startswith("refused: ") and "No appropriate protocol" in refused, refused

    java_config = {str(p.relative_to(authors / "java-config")): p.read_bytes()
                   for p in (authors / "java-config").rglob("*") if p.is_file()}
    ours = tmp_path / "library"
    for name, data in tls_work_around(java_config).items():
        (ours / "java-config" / name).parent.mkdir(parents=True, exist_ok=True)
        (ours / "java-config" / name).write_bytes(data)
    assert _handshake(program, ours) == "handshake: TLS_ECDHE_ECDSA_WITH_NULL_SHA 7"
    # the authors' lines stay (BouncyCastle as a provider); only the work-around's line is added
    text = (ours / "java-config" / "java.security").read_text()
    assert (authors / "java-config" / "java.security").read_text().strip() in text
    assert "NULL" not in text.split("jdk.tls.disabledAlgorithms=")[1]
