"""rankmetric.losses"""
