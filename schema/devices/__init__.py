"""Push devices: the Device type and the registerDevice / unregisterDevice inputs,
payloads and result unions."""
