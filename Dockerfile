# placementd as a single static binary on an empty base image. Build the
# binary first (no registry is needed, nothing is pulled):
#   make build            # CGO_ENABLED=0 -> bin/placementd
#   docker build -t placementd:local .
# docker-compose.yml runs a 3-node cluster from this image; see docs/cluster.md.
FROM scratch
COPY bin/placementd /placementd
# Listen on every interface of the container; advertise the node's name
# with --http-advertise / --raft-advertise (see docker-compose.yml). On
# this address the default --auth-strategy noauth2 refuses to start: give
# --auth-strategy keystone, or --auth-noauth2-insecure-remote for a test
# cluster. Raft on 0.0.0.0 needs PLACEMENTD_CLUSTER_SECRET (Raft's mutual
# TLS is derived from it), or PLACEMENTD_RAFT_ADDR=127.0.0.1:8779 for a lone
# node (docs/security.md).
ENV PLACEMENTD_HTTP_ADDR=0.0.0.0:8778 \
    PLACEMENTD_RAFT_ADDR=0.0.0.0:8779 \
    PLACEMENTD_DATA_DIR=/data
VOLUME /data
EXPOSE 8778 8779
ENTRYPOINT ["/placementd"]
CMD ["serve"]
