"""Every scenario of `make bench`, one a file, in the order they run."""

from scenarios.campaign import Campaign
from scenarios.deadline import Deadline
from scenarios.fcm_campaign import FCMCampaign
from scenarios.https import HTTPS
from scenarios.object_store import ObjectStore
from scenarios.payload_memory import PayloadMemory
from scenarios.service import Service
from scenarios.tenants import Tenants
from scenarios.transformation import Transformation
from scenarios.unique import Unique
from scenarios.video import Video
from scenarios.workers import Workers

ALL = (Unique, Campaign, HTTPS, Video, Deadline, PayloadMemory, FCMCampaign, Service, Tenants, Workers, Transformation,
       ObjectStore)
