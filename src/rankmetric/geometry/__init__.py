"""rankmetric.geometry"""
