#!/usr/bin/env bash
# Make the certificates of a grstats group: a CA, one certificate per member, one client.
#
#   deploy/tls/make-certs.sh DIR NAME=SERVER_UUID@HOST[,HOST...] [NAME=...]...
#
# For a 3-member group:
#
#   deploy/tls/make-certs.sh /etc/grstats/tls \
#       db1=3e11fa47-71ca-11e1-9e33-c80aa9429562@db1.example.net,10.0.0.5 \
#       db2=4f22ab58-82db-22f2-af44-d91bb0530673@db2.example.net,10.0.0.6 \
#       db3=5a33bc69-93ec-33a3-b055-ea2cc1641784@db3.example.net,10.0.0.7
#
# writes into DIR:
#   ca.pem, ca.key        the group's CA (keep ca.key offline; only ca.pem goes to the hosts)
#   NAME.pem, NAME.key    each member's agent certificate: serverAuth and clientAuth, with the
#                         subject alternative names URI:urn:grstats:member:SERVER_UUID (the one
#                         member this agent may speak for) and DNS:HOST or IP:HOST for each
#                         HOST (the addresses its peers dial)
#   client.pem, client.key  clientAuth only, no member: for grstats query and the collector
#
# SERVER_UUID is the member's @@server_uuid. An existing ca.pem and ca.key in DIR are reused,
# so members can be added later; existing member certificates are overwritten. Keys are EC
# P-256, written with mode 0600. DAYS (default 825) sets the validity.
set -euo pipefail

if [[ $# -lt 2 ]]; then
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi

dir=$1
shift
days=${DAYS:-825}
mkdir -p "$dir"
cd "$dir"
umask 077

newkey=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)

if [[ ! -f ca.pem || ! -f ca.key ]]; then
    openssl req -x509 "${newkey[@]}" -days "$days" -subj "/CN=grstats CA" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -keyout ca.key -out ca.pem 2>/dev/null
    chmod 0644 ca.pem
fi

# sign NAME SUBJECT USAGE SAN: a key and a certificate signed by the CA.
sign() {
    local name=$1 subject=$2 usage=$3 san=$4
    {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature"
        echo "extendedKeyUsage=$usage"
        echo "subjectAltName=$san"
        echo "authorityKeyIdentifier=keyid"
        echo "subjectKeyIdentifier=hash"
    } >"$name.ext"
    openssl req "${newkey[@]}" -subj "$subject" -keyout "$name.key" -out "$name.csr" 2>/dev/null
    openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
        -days "$days" -extfile "$name.ext" -out "$name.pem" 2>/dev/null
    rm -f "$name.csr" "$name.ext"
    chmod 0644 "$name.pem"
}

uuid_re='^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$'
for member in "$@"; do
    name=${member%%=*}
    rest=${member#*=}
    uuid=${rest%%@*}
    hosts=${rest#*@}
    if [[ $member != *=*@* || -z $name || $name == client || $name == ca ]] \
        || [[ ! $uuid =~ $uuid_re || -z $hosts ]]; then
        echo "make-certs.sh: $member is not NAME=SERVER_UUID@HOST[,HOST...]" >&2
        exit 2
    fi
    uuid=$(tr 'A-F' 'a-f' <<<"$uuid")
    san="URI:urn:grstats:member:$uuid"
    IFS=, read -r -a names <<<"$hosts"
    for host in "${names[@]}"; do
        if [[ $host =~ ^[0-9.]+$ || $host == *:* ]]; then
            san+=",IP:$host"
        else
            san+=",DNS:$host"
        fi
    done
    sign "$name" "/CN=grstats member $name" "serverAuth,clientAuth" "$san"
    echo "$dir/$name.pem: member $uuid ($hosts)"
done

sign client "/CN=grstats client" "clientAuth" "DNS:grstats-client"
echo "$dir/client.pem: client (grstats query, the collector)"
